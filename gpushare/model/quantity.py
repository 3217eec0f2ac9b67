"""Kubernetes resource quantities ("4", "1000m", "1Gi", "1e3"), as the API server reads them.

The grammar is k8s.io/apimachinery v0.34.4 `pkg/api/resource/quantity.go` ParseQuantity: an optional sign, digits with
an optional fraction (either part may be empty: ".5", "1."), then one suffix: binary (Ki..Ei), decimal (m, k, M, G,
T, P, E) or a decimal exponent (`e`/`E` and a signed integer; "1E" is an exa, "1E3" a thousand, `suffix.go`
interpret). The API server rewrites quantities in a canonical form ("1024Mi" becomes "1Gi"), so two strings may name
the same value: compare what this returns.
"""

from __future__ import annotations

import re
from decimal import Decimal

_SUFFIXES = {
    "": Decimal(1), "m": Decimal("0.001"), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18, "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?")


def parse_quantity(value: object) -> Decimal | None:
    """The quantity's value, or None when the API server would refuse it. A bool is no quantity; a number (YAML's
    `gpu: 1`) is read as its text."""
    if isinstance(value, bool):
        return None
    match = _QUANTITY.fullmatch(str(value))
    if not match or not str(value):
        return None
    sign, whole, fraction, suffix = match.groups()
    number = Decimal(f"{sign}{whole or '0'}.{fraction or '0'}")
    if (suffix or "") in _SUFFIXES:
        return number * _SUFFIXES[suffix or ""]
    return number.scaleb(int(suffix[1:]))  # a decimal exponent
