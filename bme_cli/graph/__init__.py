"""The ST-BME v3 memory graph: model, schema, operations, codec and sidecar store."""
