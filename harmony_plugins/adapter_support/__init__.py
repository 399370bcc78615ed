"""What both engine adapters share, and the core's edge to the outside: the engines' pydantic
models built from the parser's values (:mod:`.models`), the counters of contract section 9
and the response's log line (:mod:`.metrics`), the vocabulary written for openai-harmony
offline (:mod:`.vocabulary`), openai-harmony's messages built from the core's
(:mod:`.messages`), a Messages API event stream with the core's blocks for calls
(:mod:`.messages_stream`), wrapping an engine function once (:mod:`.hooks`), saying a thing once
(:mod:`.once`) and reading an engine's version (:mod:`.versions`). No core module imports this
package but the two that face outside code as the adapters do, the command line and the
drop-in parser (:mod:`harmony_plugins.compat`); each module imports its third-party library
only when used, so importing it imports none."""
