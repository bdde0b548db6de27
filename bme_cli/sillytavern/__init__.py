"""Giving back to SillyTavern: the chat header's graph (attach/detach), World Info lorebooks
and character cards, both ways. Library code: no typer, no rich, no printing.
"""
