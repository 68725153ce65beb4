"""The JSON body parser: DRF's, plus a refusal of text PostgreSQL cannot store.

A NUL character or a lone UTF-16 surrogate ("\\ud800") is valid JSON but not storable
text; refused here, once, it is a 400 for every endpoint instead of a database error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class StrictJSONParser(JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        data = super().parse(stream, media_type, parser_context)
        encoded = json.dumps(data, ensure_ascii=False)
        try:
            encoded.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ParseError("The body contains text that is not valid Unicode.") from exc
        if "\\u0000" in encoded:
            raise ParseError("The body must not contain the NUL character.")
        return data
