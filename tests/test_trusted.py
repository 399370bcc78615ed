"""harmony_plugins.adapter_support.trusted: unvalidated pydantic instances equal validated ones."""

from __future__ import annotations

import copy
import pickle

import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harmony_plugins.adapter_support import trusted

calls = []


class Item(BaseModel):
    name: str | None = None
    arguments: str | None = None


class Loud(BaseModel):
    """Like vLLM's OpenAIBaseModel: extras allowed, a Python wrap validator on every build."""

    model_config = ConfigDict(extra="allow")
    role: str | None = None
    content: str | None = None
    items: list[Item] = Field(default_factory=list)
    scores: dict[str, int] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=lambda: ["t"])
    seen: list[str] = []
    on: bool = False
    kind: str = "function"

    @model_validator(mode="wrap")
    @classmethod
    def _count(cls, data, handler):
        calls.append(data)
        return handler(data)


@pytest.mark.parametrize("cls, given", [
    (Loud, {"content": "x"}),
    (Loud, {}),
    (Loud, {"role": "assistant", "content": None}),
    (Loud, {"items": [Item(arguments="{}")]}),
    (Item, {"arguments": "a"}),
    (Item, {"name": "f", "arguments": ""}),
])
def test_builder_makes_what_validation_makes(cls, given):
    calls.clear()
    fast = trusted.template(cls, *given)(*given.values())
    assert calls == []  # the validator did not run
    slow = cls(**given)
    assert trusted.same([(fast, slow)])
    assert fast.model_fields_set == set(given)
    assert fast.model_dump_json(exclude_unset=True) == slow.model_dump_json(exclude_unset=True)


def test_default_factories_are_fresh_per_instance():
    build = trusted.template(Loud)
    a, b = build(), build()
    a.items.append(Item())
    a.scores["x"] = 1
    a.tags.append("u")
    a.seen.append("v")
    assert (b.items, b.scores, b.tags, b.seen) == ([], {}, ["t"], [])
    assert (b.on, b.kind) == (False, "function")
    assert trusted.same([(build(), Loud())])


def test_same_tells_differences():
    good = trusted.template(Item, "arguments")("a")
    assert not trusted.same([(good, Item(arguments="b"))])  # another value
    assert not trusted.same([(good, Item(name=None, arguments="a"))])  # other fields set
    assert not trusted.same([(Loud(content="a"), Item(arguments="a"))])  # another type
    assert trusted.same([(good, Item(arguments="a"))])


def test_same_says_no_where_the_layout_is_unknown(monkeypatch):
    monkeypatch.setattr(trusted, "SLOTS", None)
    assert not trusted.same([(Item(), Item())])
    assert not trusted.builders({"named": (Item, ("name",), ("f",))}).trusted


class Upper(BaseModel):
    """Validation changes the value: a template would not make what validation makes."""

    name: str | None = None

    @field_validator("name")
    @classmethod
    def _upper(cls, value):
        return value.upper() if value else value


def test_builders_check_the_samples_and_say_no_on_any_error():
    made = trusted.builders({"named": (Item, ("name",), ("f",))})
    assert made.trusted
    assert trusted.same([(made.named("g"), Item(name="g"))])
    assert not trusted.builders({"named": (Upper, ("name",), ("f",))}).trusted
    # a field this pydantic does not know
    broken = trusted.builders({"named": (Item, ("title",), ("f",))})
    assert not broken.trusted
    assert broken.named("f") == Item(title="f")  # what the model's own constructor makes
    validated = trusted.builders({"named": (Item, ("name",), ("f",))}, validate=True)
    assert not validated.trusted and validated.named("f") == Item(name="f")


class Mutable(BaseModel):
    calls: list = []
    meta: dict = {}


def test_mutable_defaults_are_not_shared_between_instances():
    build = trusted.template(Mutable)
    a, b = build(), build()
    a.calls.append(1)
    a.meta["k"] = 1
    assert b.calls == [] and b.meta == {} and Mutable().calls == []


class Needs(BaseModel):
    name: str


def test_a_build_without_a_required_field_is_refused():
    with pytest.raises(TypeError, match="Needs needs name"):
        trusted.template(Needs)
    assert trusted.same([(trusted.template(Needs, "name")("x"), Needs(name="x"))])


class Holder(BaseModel):
    """Nested models, as vLLM's ``DeltaMessage`` holds ``DeltaToolCall``s holding a function."""

    model_config = ConfigDict(extra="allow")
    note: str | None = None
    loud: Loud | None = None
    items: list[Item] = Field(default_factory=list)


def test_a_nested_template_builds_each_model_as_validation_does_in_one_call():
    calls.clear()
    build = trusted.template(Holder, "note", ("loud", (Loud, ("content",))),
                             ("items", [(Item, ("name", "arguments"))]))
    fast = build("n", "c", "f", "{}")  # the values in order, a nested model's in its place
    assert calls == []
    slow = Holder(note="n", loud=Loud(content="c"), items=[Item(name="f", arguments="{}")])
    assert calls  # Loud's validator ran for the validated one only
    assert trusted.same([(fast, slow)])
    assert fast.loud.model_fields_set == {"content"}
    assert fast.items[0].model_fields_set == {"name", "arguments"}
    other = build("n", "c", "f", "{}")
    fast.loud.items.append(Item())  # the nested model's mutable defaults are its own
    assert other.loud.items == [] and fast.items is not other.items
    twin = trusted.validated(Holder, "note", ("loud", (Loud, ("content",))),
                             ("items", [(Item, ("name", "arguments"))]))
    assert trusted.same([(twin("n", "c", "f", "{}"), slow)])
    with pytest.raises(TypeError, match="more values"):
        twin("n", "c", "f", "{}", "extra")


def test_a_nested_field_the_model_lacks_is_refused_and_builders_validate():
    with pytest.raises(TypeError, match="Item has no field 'title'"):
        trusted.template(Holder, ("items", [(Item, ("title",))]))
    made = trusted.builders({"nested": (Holder, (("items", [(Item, ("title",))]),), ("t",))})
    assert not made.trusted
    assert made.nested("t") == Holder(items=[Item(title="t")])


def test_an_instance_is_filled_as_its_stand_in_then_is_the_model_itself():
    assert trusted.stand_in(Loud) is trusted.stand_in(Loud)  # one per model
    assert trusted.stand_in(Loud) is not trusted.stand_in(Item)
    fast = trusted.template(Loud, "content")("a")
    slow = Loud(content="a")
    assert type(fast) is Loud and type(fast).__setattr__ is BaseModel.__setattr__
    # the instance behaves as pydantic's own afterwards: an assignment marks its field set,
    # an extra goes where pydantic keeps extras, a deletion removes the field
    for made in (fast, slow):
        made.role = "assistant"
        made.note = "extra"
        del made.kind
    assert trusted.same([(fast, slow)])
    assert fast.model_extra == {"note": "extra"} and "kind" not in fast.__dict__
    assert fast.model_fields_set == slow.model_fields_set >= {"content", "role"}
    # and is copied, pickled and updated as pydantic's own
    twins = [
        (copy.deepcopy(fast), copy.deepcopy(slow)),
        (pickle.loads(pickle.dumps(fast)), pickle.loads(pickle.dumps(slow))),
        (fast.model_copy(update={"content": "b"}), slow.model_copy(update={"content": "b"})),
    ]
    for twin_fast, twin_slow in twins:
        assert type(twin_fast) is Loud and trusted.same([(twin_fast, twin_slow)])


class Slotted(BaseModel):
    """A model with slots of its own: laid out otherwise than a plain subclass."""

    __slots__ = ("cache",)
    name: str | None = None


with pytest.warns(UserWarning, match="shadows an attribute"):
    class Shadows(BaseModel):
        """A field named as one of BaseModel's methods: whether an attribute store reaches
        the instance's fields depends on the method, so it is not built by one."""

        copy: int = 0


def test_a_model_a_stand_in_cannot_fill_is_refused_and_builders_validate():
    with pytest.raises(TypeError, match="Slotted is laid out otherwise than BaseModel"):
        trusted.template(Slotted, "name")
    with pytest.raises(TypeError, match="Shadows.copy: not set by a plain attribute store"):
        trusted.template(Shadows, "copy")
    made = trusted.builders({"slotted": (Slotted, ("name",), ("n",)),
                             "shadows": (Shadows, ("copy",), (1,))})
    assert not made.trusted
    assert made.slotted("n") == Slotted(name="n") and made.shadows(2) == Shadows(copy=2)
