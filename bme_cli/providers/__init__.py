"""Model providers: the ChatModel/Embedder seams, the OpenAI-compatible client, offline defaults."""
