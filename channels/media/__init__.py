"""Files in and out of chats: bounded downloads and the `send-file` function."""
