"""Telegram Bot API channel."""
