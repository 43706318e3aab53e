"""Slack Events API and Web API channel."""
