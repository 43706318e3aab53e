"""Chat commands (`/new`, `/reset`, `/stop`, `/status`, `/usage`, `/pair`, `/help`): which
texts are commands is decided in `harness.events.commands`; this package answers them, beside
the chat's turn and without a model call (`handler`)."""
