"""bme: long-term graph memory for SillyTavern chats, on the command line."""
__version__ = "0.1.0"
