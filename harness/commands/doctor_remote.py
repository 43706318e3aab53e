"""`harness doctor`'s checks of what lies beyond this machine: the model and the chat
platforms. The model through the client the fleet uses (`harness.llm`); each channel through
the checks its plug-in provides (`channels.plugin.ChannelPlugin.checks`). Tokens are never
printed.
"""

from __future__ import annotations

from channels import registry as channel_registry
from harness.checks import SKIPPED, Check
from harness.errors import ConfigurationError, InvalidSettingsError
from harness.llm.errors import ModelError
from harness.llm.factory import build_provider, model_choice
from harness.llm.types import Message
from harness.settings import Settings


def model_checks(settings: Settings, *, offline: bool) -> list[Check]:
    """The model is configured (a key or base URL for LLM_PROVIDER) and answers a one-token
    request, unless `offline`. Never raises."""
    provider_name = settings.llm_provider
    key_var = f"{provider_name.upper()}_API_KEY"
    try:
        choice = model_choice(settings)
        # offline: no provider, so that its SDK is not even imported
        provider = None if offline or choice is None else build_provider(settings)
    except (ConfigurationError, ModelError) as exc:
        return [Check("model", "fail", str(exc), f"check LLM_PROVIDER and {key_var}")]
    if choice is None:
        fix = f"set {key_var} (or {provider_name.upper()}_BASE_URL for a compatible server)"
        return [Check("model", "fail", f"LLM_PROVIDER={provider_name} has no {key_var}", fix)]
    checks = [Check("model", "ok", f"{choice.provider}, model {choice.model}")]
    if provider is None:
        checks.append(Check("model reachable", "warn", SKIPPED))
        return checks
    try:
        provider.complete(system="", messages=[Message.user("ping")], max_tokens=1)
    except ModelError as exc:
        fix = f"check {key_var}, {provider_name.upper()}_BASE_URL and AGENT_MODEL"
        checks.append(Check("model reachable", "fail", str(exc), fix))
    else:
        checks.append(Check("model reachable", "ok", "answered a one-token request"))
    finally:
        provider.close()
    return checks


def channel_checks(*, offline: bool) -> list[Check]:
    """The checks of every loaded channel plug-in that provides some (`ChannelPlugin.checks`),
    by channel name: for the built-in ones, whether the platform accepts the bot token and the
    secret that authenticates webhooks is set. A plug-in whose hook fails gives one failed
    check naming it. Raises only `InvalidSettingsError`, for an invalid channel setting."""
    channel_registry.load_plugins()  # no channel is built: the platforms are not installed
    checks: list[Check] = []
    for name in channel_registry.names():
        plugin = channel_registry.plugin(name)
        if plugin is None or plugin.checks is None:
            continue
        try:
            checks.extend(plugin.checks(offline))
        except InvalidSettingsError:
            raise  # reported like every invalid setting: one line per variable, exit 2
        except Exception as exc:  # a plug-in's bug must not hide the other checks
            detail = f"its checks failed: {type(exc).__name__}: {exc}"
            checks.append(Check(name, "fail", detail, f"report it to the {name} plug-in"))
    return checks
