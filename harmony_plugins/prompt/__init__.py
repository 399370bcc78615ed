"""The prompt side (contract section 8): what the model reads back, for both engines and
``harmony-ext render``.

Its parts, one idea each: the data model of a prompt's messages and pieces (``_model``), the
order and drop rules of an assistant turn (``_order``), a chat request's reader (``_chat``), the
Responses API's input items (``_items``), openai-harmony's tool definitions and vocabulary
(``_render``), and control-token spellings kept as text through a chat template
(``_escaping``). The names below are what the rest of the package and the adapters use.
"""

from __future__ import annotations

from ._escaping import Escaper
from ._escaping import for_tokenizer as escaper_for
from ._items import item_messages, phase_of, round_trip_plan
from ._model import NotRenderable
from ._order import part_of, written_order
from ._render import MissingExtra, chat_prompt_ids

__all__ = ["Escaper", "MissingExtra", "NotRenderable", "chat_prompt_ids", "escaper_for",
           "item_messages", "part_of", "phase_of", "round_trip_plan", "written_order"]
