"""A minimal arclight agent in Python: the `openai` package and environment variables only.

The arclight controller starts this script once per rollout attempt with:
  AGL_OPENAI_BASE_URL  OpenAI base URL of the gateway proxy for this attempt (every call is recorded)
  AGL_KEY              gateway key, used as the OpenAI API key and on event posts
  AGL_EVENT_URL        where this attempt's events (rewards) are posted
  QUESTION, ANSWER     from the rollout input, via config.local.env_map
Exit 0 marks the rollout succeeded; any other exit fails it.
"""

import json
import os
import time
import urllib.error
import urllib.request
import uuid

from openai import OpenAI


def emit_reward(value: float, reason: str) -> None:
    """Posts a reward event; the event_id makes retries idempotent (the gateway stores it once)."""
    body = json.dumps(
        {"event_type": "reward", "event_id": str(uuid.uuid4()), "data": {"value": value, "reason": reason}}
    ).encode()
    headers = {"content-type": "application/json", "authorization": f"Bearer {os.environ.get('AGL_KEY', '')}"}
    for attempt in range(8):
        try:
            request = urllib.request.Request(os.environ["AGL_EVENT_URL"], data=body, headers=headers, method="POST")
            with urllib.request.urlopen(request, timeout=30):
                return
        except urllib.error.HTTPError as err:
            if err.code < 500 and err.code != 429:
                raise
        except urllib.error.URLError:
            pass
        time.sleep(min(5.0, 0.2 * 2**attempt))
    raise RuntimeError("could not post the reward event")


def main() -> None:
    # max_retries is high because a paused gateway (weight update) answers 429 + Retry-After, which the SDK honours.
    client = OpenAI(base_url=os.environ["AGL_OPENAI_BASE_URL"], api_key=os.environ.get("AGL_KEY") or "none", max_retries=50)
    completion = client.chat.completions.create(
        model="policy",  # replaced by the gateway's --model-name; without one, this name must be registered
        messages=[{"role": "user", "content": os.environ["QUESTION"]}],
        max_tokens=32,
    )
    answer = completion.choices[0].message.content or ""
    correct = answer.strip() == os.environ["ANSWER"]
    emit_reward(1.0 if correct else 0.0, f"answered {answer!r}")


if __name__ == "__main__":
    main()
