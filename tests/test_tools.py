"""harmony_plugins._tools: the request's tools, in any shape OpenAI allows, or a clear TypeError."""

from __future__ import annotations

import pytest

from harmony_plugins import (
    StreamParser,
)


@pytest.mark.parametrize("bad", ["get", b"get", {"type": "function", "function": {
    "name": "get"}}, [5], [None]])
def test_tools_of_no_tool_shape_are_refused(bad):
    with pytest.raises(TypeError):
        StreamParser(bad)
