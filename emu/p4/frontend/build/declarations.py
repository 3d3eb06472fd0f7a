"""Declarations: constants, variables, headers/structs/enums, typedefs, externs, functions, actions, block types, instantiations, value sets."""

from __future__ import annotations

from typing import Any

from lark import Token

from .. import ast as A
from .base import ToAstBase


class DeclarationRules(ToAstBase):
    # -- declarations
    def const_decl(self, items: list[Any]) -> A.ConstDecl:
        annos, _, typeref, name, value = items
        return A.ConstDecl(str(name), typeref, value, annotations=annos, pos=self.p(name))

    def var_decl(self, items: list[Any]) -> A.VarDecl:
        annos, typeref, name = items[:3]
        init = items[3] if len(items) > 3 else None
        return A.VarDecl(str(name), typeref, init, annotations=annos, pos=self.p(name))

    def struct_field(self, items: list[Any]) -> A.StructField:
        annos, typeref, name = items
        return A.StructField(str(name), typeref, annotations=annos, pos=self.p(name))

    def aggregate_decl(self, items: list[Any]) -> A.HeaderDecl:
        """header, header_union or struct (the keyword is the kind)."""
        annos, kw, name = items[:3]
        rest = items[3:]
        tparams: list[str] = []
        if rest and isinstance(rest[0], list):
            tparams = rest[0]
            rest = rest[1:]
        return A.HeaderDecl(str(name), list(rest), str(kw), tparams, annotations=annos, pos=self.p(name))

    def enum_decl(self, items: list[Any]) -> A.EnumDecl:
        annos, _, name, *members = items
        return A.EnumDecl(str(name), [str(m) for m in members], annotations=annos, pos=self.p(name))

    def ser_enum_decl(self, items: list[Any]) -> A.EnumDecl:
        annos, _, typeref, name, *members = items
        return A.EnumDecl(
            str(name), [m[0] for m in members], typeref, [m[1] for m in members],
            annotations=annos, pos=self.p(name),
        )

    def enum_member(self, items: list[Any]) -> tuple[str, A.Expr]:
        return str(items[0]), items[1]

    def typedef_decl(self, items: list[Any]) -> A.TypedefDecl:
        annos, _, typeref, name = items
        return A.TypedefDecl(str(name), typeref, False, annotations=annos, pos=self.p(name))

    def newtype_decl(self, items: list[Any]) -> A.TypedefDecl:
        annos, _, typeref, name = items
        return A.TypedefDecl(str(name), typeref, True, annotations=annos, pos=self.p(name))

    def error_decl(self, items: list[Any]) -> A.ErrorDecl:
        return A.ErrorDecl("error", [str(m) for m in items[1:]], pos=self.p(items[0]))

    def match_kind_decl(self, items: list[Any]) -> A.MatchKindDecl:
        return A.MatchKindDecl("match_kind", [str(m) for m in items[1:]], pos=self.p(items[0]))

    def extern_decl(self, items: list[Any]) -> A.ExternDecl:
        annos, _, name, *rest = items
        tparams: list[str] = []
        if rest and isinstance(rest[0], list):
            tparams = rest[0]
            rest = rest[1:]
        return A.ExternDecl(str(name), tparams, list(rest), annotations=annos, pos=self.p(name))

    def extern_function_decl(self, items: list[Any]) -> A.MethodDecl:
        annos, _, proto = items
        proto.annotations = annos
        return proto  # type: ignore[no-any-return]

    def ctor_proto(self, items: list[Any]) -> A.MethodDecl:
        annos, name, params = items
        return A.MethodDecl(str(name), None, [], params, is_ctor=True, annotations=annos, pos=self.p(name))

    def method_proto(self, items: list[Any]) -> A.MethodDecl:
        annos = items[0]
        proto: A.MethodDecl = items[-1]
        proto.annotations = annos
        proto.abstract = len(items) == 3
        return proto

    def function_proto(self, items: list[Any]) -> A.MethodDecl:
        ret = items[0]
        if isinstance(ret, Token):
            ret = A.BaseTypeRef("void", pos=self.p(ret))
        name = items[1]
        tparams: list[str] = []
        params = items[-1]
        if len(items) == 4:
            tparams = items[2]
        return A.MethodDecl(str(name), ret, tparams, params, pos=self.p(name))

    def function_decl(self, items: list[Any]) -> A.FunctionDecl:
        annos, proto, body = items
        proto.annotations = annos
        return A.FunctionDecl(proto.name, proto, body, annotations=annos, pos=proto.pos)

    def action_decl(self, items: list[Any]) -> A.ActionDecl:
        annos, _, name, params, body = items
        return A.ActionDecl(str(name), params, body, annotations=annos, pos=self.p(name))

    def block_type_decl(self, items: list[Any]) -> A.ParserTypeDecl:
        """parser, control or package type (the keyword is the kind)."""
        annos, kw, name, *rest = items
        tparams = rest[0] if len(rest) == 2 else []
        return A.ParserTypeDecl(str(name), tparams, rest[-1], str(kw), annotations=annos, pos=self.p(name))

    def instantiation(self, items: list[Any]) -> A.Instantiation:
        annos, typeref, args, name, *rest = items
        init = rest[0] if rest else []
        return A.Instantiation(str(name), typeref, args, init, annotations=annos, pos=self.p(name))

    def obj_init(self, items: list[Any]) -> list[A.Decl]:
        return list(items)

    def value_set_decl(self, items: list[Any]) -> A.ValueSetDecl:
        annos, _, _tlt, elem, _gt, size, name = items
        return A.ValueSetDecl(str(name), elem, size, annotations=annos, pos=self.p(name))
