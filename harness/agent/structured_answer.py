"""A named agent's answer as JSON valid against its `output_schema`.

The child is told in its task to answer with JSON only (`schema_instruction`). Its final answer
is checked (`check`); when it does not match, the child gets ONE more model call (a durable
"think" step of the child's run) with the validation error, and when that does not match
either the delegation fails with `StructuredAnswerError`, whose text says what was wrong. A
fenced block (```json ... ```) around the JSON is accepted; the parent gets the JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from harness.errors import NonRetriableError
from harness.llm.types import AssistantTurn, Message, ToolSpec

Think = Callable[[Sequence[Message], Sequence[ToolSpec], str], AssistantTurn]
MAX_ERROR_CHARS = 500


class StructuredAnswerError(NonRetriableError):
    """The agent's answer did not match its output schema, twice: the delegation fails."""


def schema_instruction(schema: dict[str, Any]) -> str:
    """What the child's task ends with: answer with JSON matching `schema`, nothing else."""
    return (
        "Your final answer must be only a JSON value valid against this JSON Schema (no prose "
        f"around it):\n\n{json.dumps(schema, indent=1, sort_keys=True)}"
    )


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a valid JSON Schema (draft 2020-12), or None when it is. Pure."""
    # Imported here: jsonschema holds ~3 MB in every fleet process; only a structured answer
    # needs it.
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return exc.message[:MAX_ERROR_CHARS]
    return None


def check(text: str, schema: dict[str, Any]) -> tuple[str | None, str]:
    """(the JSON text, "") when `text` is JSON valid against `schema`; else (None, why not).
    Pure; never raises."""
    import jsonschema  # here, as in `schema_problem`

    body = _unfenced(text.strip())
    try:
        value = json.loads(body)
    except ValueError as exc:
        return None, f"the answer is not JSON ({exc})"
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(value)
    )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(the top level)"
        return None, f"at {where}: {error.message}"[:MAX_ERROR_CHARS]
    return json.dumps(value, ensure_ascii=False), ""


def structured_answer(
    think: Think, task: str, answer: str, schema: dict[str, Any]
) -> tuple[str, AssistantTurn | None]:
    """The JSON answer and the extra model turn it took (None when the first answer was
    valid). `think` is the child's durable model call. Raises `StructuredAnswerError` when the
    second answer does not match either."""
    valid, error = check(answer, schema)
    if valid is not None:
        return valid, None
    correction = (
        f"Your answer does not match the required JSON Schema: {error}\n"
        "Answer again with only the corrected JSON."
    )
    said = Message.assistant(answer or "(no answer)")
    messages = [Message.user(task), said, Message.user(correction)]
    retry = think(messages, [], "")
    valid, again = check(retry.text, schema)
    if valid is None:
        raise StructuredAnswerError(
            f"its answer did not match its output_schema after one correction: {again}"
        )
    return valid, retry


def _unfenced(text: str) -> str:
    if text.startswith("```") and text.endswith("```") and "\n" in text:
        return text[text.index("\n") + 1 : -3].strip()
    return text
