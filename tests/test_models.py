"""harmony_plugins.adapter_support.models: the engines' models are validated by pydantic, and
only an outermost wrap validator the adapter names harmless, from the engine's package, is
left out.

The expected instances are pydantic's own (the model's constructor): an independent
implementation of what the adapters' builds must equal."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pydantic
import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harmony_plugins.adapter_support import models

calls: list[Any] = []


class Item(BaseModel):
    name: str | None = None
    arguments: str | None = None


class Logged(BaseModel):
    """As vLLM's OpenAIBaseModel: extras allowed, a Python wrap validator on every build that
    hands back what validation made (it only records its input here)."""

    model_config = ConfigDict(extra="allow")
    role: str | None = None
    content: str | None = None
    items: list[Item] = Field(default_factory=list)
    seen: list[str] = []
    kind: str = "function"

    @model_validator(mode="wrap")
    @classmethod
    def _log_extra(cls, data: Any, handler: Any) -> Any:
        calls.append(data)
        return handler(data)


HARMLESS = ("Logged._log_extra",)


def same(made: Any, validated: Any) -> None:
    """``made`` is the instance validation made, as far as anyone can tell."""
    assert type(made) is type(validated)
    assert made == validated
    assert made.model_fields_set == validated.model_fields_set
    assert made.model_extra == validated.model_extra
    assert list(vars(made)) == list(vars(validated))
    assert made.model_dump_json() == validated.model_dump_json()
    assert made.model_dump_json(exclude_unset=True) == validated.model_dump_json(
        exclude_unset=True)


@pytest.mark.parametrize("cls, given", [
    (Logged, {"content": "x"}),
    (Logged, {}),
    (Logged, {"role": "assistant", "content": None}),
    (Logged, {"items": [Item(arguments="{}")]}),
    (Item, {"arguments": "a"}),
    (Item, {"name": "f", "arguments": ""}),
])
def test_a_build_is_the_instance_the_models_constructor_makes(cls, given):
    build = models.validator(cls, HARMLESS, __name__)
    same(build(dict(given)), cls(**given))


def test_the_named_wrap_validator_is_left_out_and_only_it():
    calls.clear()
    models.validator(Logged, HARMLESS, __name__)({"content": "x"})
    assert calls == []  # left out: named, from this module
    for harmless, module in [((), __name__), (HARMLESS, ""), (HARMLESS, "vllm"),
                             (("Other._log_extra",), __name__),
                             (HARMLESS, __name__.rpartition(".")[0] + ".other")]:
        models.validator(Logged, harmless, module)({"content": "y"})
        assert calls == [{"content": "y"}], (harmless, module)
        calls.clear()


class Stripped(BaseModel):
    """A validator whose effect depends on the value: it strips NUL characters."""

    model_config = ConfigDict(extra="allow")
    name: str | None = None

    @field_validator("name")
    @classmethod
    def _strip(cls, value: str | None) -> str | None:
        return value.replace("\x00", "") if value is not None else value

    @model_validator(mode="wrap")
    @classmethod
    def _log_extra(cls, data: Any, handler: Any) -> Any:
        return handler(data)


def test_a_value_dependent_validator_runs_even_beside_a_harmless_one():
    for harmless in ((), ("Stripped._log_extra",)):
        build = models.validator(Stripped, harmless, __name__)
        assert build({"name": "a\x00b"}).name == "ab"
        assert build({"name": "ab"}).name == "ab"  # one sample alone would not have told


class Outer(Logged):
    """A second model validator outside the harmless one: the whole schema runs."""

    @model_validator(mode="after")
    def _upper(self) -> Outer:
        self.content = (self.content or "").upper()
        return self


def test_a_harmless_validator_that_is_not_the_outermost_keeps_the_whole_schema():
    assert models.skipped_wrap(Outer, ("Logged._log_extra", "Outer._upper"), __name__) is None
    assert models.validator(Outer, HARMLESS, __name__)({"content": "a"}).content == "A"
    assert models.skipped_wrap(Logged, HARMLESS, __name__) is not None


def test_a_build_behaves_as_a_validated_instance_afterwards():
    """An assignment marks its field set, an extra goes where pydantic keeps extras, a
    deletion removes the field; copies, pickles and model_copy match pydantic's own; a
    mutable default is the instance's own."""
    made = models.validator(Logged, HARMLESS, __name__)({"content": "a"})
    validated = Logged(content="a")
    assert made.seen is not Logged.model_fields["seen"].default
    for instance in (made, validated):
        instance.role = "assistant"
        instance.note = "extra"
        del instance.kind
    same(made, validated)
    for twin_made, twin_validated in [
        (copy.deepcopy(made), copy.deepcopy(validated)),
        (pickle.loads(pickle.dumps(made)), pickle.loads(pickle.dumps(validated))),
        (made.model_copy(update={"content": "b"}), validated.model_copy(update={"content": "b"})),
    ]:
        same(twin_made, twin_validated)


def test_a_bad_value_is_refused_as_pydantic_refuses_it():
    with pytest.raises(pydantic.ValidationError):
        models.validator(Logged, HARMLESS, __name__)({"content": 3})
    with pytest.raises(pydantic.ValidationError):
        models.validator(Item)({"name": ["x"]})
