#!/usr/bin/env python3
"""Renders chat-template test cases with Jinja2 set up as Hugging Face transformers sets it up
(trim_blocks, lstrip_blocks, loopcontrols, Python tojson, raise_exception, strftime_now), and writes
the expected outputs that ChatTemplateTest compares the Java renderer against.

Usage (from the repo root; needs python3 with Jinja2 3.1, the version transformers uses):
  apt-get install python3-jinja2        # Debian's package, or: pip install jinja2==3.1.6
  python3 frontend/src/test/python/render_chat_golden.py
"""
import json
import pathlib

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parents[1] / "resources"
TOKENIZER_CONFIG = (pathlib.Path(__file__).resolve().parents[4] / "engine-adapters/src/main/resources"
                    / "dev/tandem/engine/models/qwen3-tokenizer/tokenizer_config.json")


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def render_all(template_source, cases, bos="", eos=""):
    template = environment().from_string(template_source)
    out = {}
    for case in cases:
        ctx = dict(case.get("kwargs", {}))
        ctx.update(messages=case["messages"], add_generation_prompt=case["add_generation_prompt"],
                   bos_token=bos, eos_token=eos)
        if case.get("tools"):
            ctx["tools"] = case["tools"]
        out[case["name"]] = template.render(**ctx)
    return out


def phi4_mini_messages(case):
    """Phi-4-mini's template reads tools from the system message (Microsoft's model card: the
    functions as JSON between <|tool|> and <|/tool|>, a system message such as "You are a helpful
    assistant with some tools."), and renders an assistant turn's content only, so earlier calls
    are written as the model writes them: <|tool_call|>[...]<|/tool_call|>."""
    messages = [dict(m) for m in case["messages"]]
    if case.get("tools"):
        functions = json.dumps([t["function"] for t in case["tools"]], ensure_ascii=False)
        if messages[0]["role"] == "system":
            messages[0]["tools"] = functions
        else:
            messages.insert(0, {"role": "system", "content": "You are a helpful assistant with some tools.", "tools": functions})
    for m in messages:
        if m.get("tool_calls") and not m.get("content"):
            calls = [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in m["tool_calls"]]
            m["content"] = "<|tool_call|>" + json.dumps(calls, ensure_ascii=False) + "<|/tool_call|>"
    return messages


def main():
    config = json.loads(TOKENIZER_CONFIG.read_text())
    cases = json.loads((ROOT / "chat/cases.json").read_text())
    expected = render_all(config["chat_template"], cases, eos=config["eos_token"])
    (ROOT / "chat/qwen3_expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    compat_cases = json.loads((ROOT / "chat/compat_cases.json").read_text())
    compat = render_all((ROOT / "chat/compat_template.jinja").read_text(), compat_cases)
    (ROOT / "chat/compat_expected.json").write_text(json.dumps(compat, indent=1, ensure_ascii=False) + "\n")
    # Gemma 3's template (google/gemma-3-1b-it's tokenizer_config.json), whose BOS is in the template.
    gemma_cases = json.loads((ROOT / "chat/gemma3_cases.json").read_text())
    gemma = render_all((ROOT / "chat/gemma3_template.jinja").read_text(), gemma_cases, bos="<bos>", eos="<eos>")
    (ROOT / "chat/gemma3_expected.json").write_text(json.dumps(gemma, indent=1, ensure_ascii=False) + "\n")
    # Phi-4-mini's template (microsoft/Phi-4-mini-instruct's tokenizer_config.json), tools in the system message.
    phi_cases = json.loads((ROOT / "chat/phi4_mini_cases.json").read_text())
    phi_cases = [dict(c, messages=phi4_mini_messages(c), tools=None) for c in phi_cases]
    phi = render_all((ROOT / "chat/phi4_mini_template.jinja").read_text(), phi_cases, eos="<|endoftext|>")
    (ROOT / "chat/phi4_mini_expected.json").write_text(json.dumps(phi, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
