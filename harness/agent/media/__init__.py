"""Files in and out of a conversation: what people send the agent and what it sends back.

Where received files are kept (`inbox`), what the model is told and shown of them
(`attachments`, `documents`, `albums`), dropping old images before each model call
(`image_pruning`), and the `send_file` tool.
"""
