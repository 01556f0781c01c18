"""``convert_units``: exact conversions between common units, offline, so figures from different sources
can be compared on one scale (kWh and MJ, miles and km, °F and °C, ...)."""

from __future__ import annotations

from deep_research_agent.domain.errors import ToolFailure
from deep_research_agent.tools.custom import CustomTool

# Factor to the dimension's base unit (metre, kilogram, joule, watt, second, square metre, litre, pascal).
_FACTORS: dict[str, dict[str, float]] = {
    "length": {
        "m": 1,
        "km": 1000,
        "cm": 0.01,
        "mm": 0.001,
        "mi": 1609.344,
        "yd": 0.9144,
        "ft": 0.3048,
        "in": 0.0254,
        "nmi": 1852,
    },
    "mass": {"kg": 1, "g": 0.001, "mg": 1e-6, "t": 1000, "lb": 0.45359237, "oz": 0.028349523125, "st": 6.35029318},
    "energy": {
        "j": 1,
        "kj": 1e3,
        "mj": 1e6,
        "gj": 1e9,
        "wh": 3600,
        "kwh": 3.6e6,
        "mwh": 3.6e9,
        "gwh": 3.6e12,
        "twh": 3.6e15,
        "cal": 4.184,
        "kcal": 4184,
        "btu": 1055.05585262,
        "toe": 4.1868e10,
    },
    "power": {"w": 1, "kw": 1e3, "mw": 1e6, "gw": 1e9, "hp": 745.699872},
    "time": {"s": 1, "min": 60, "h": 3600, "day": 86400, "week": 604800, "year": 31557600},
    "area": {"m2": 1, "km2": 1e6, "ha": 1e4, "acre": 4046.8564224, "ft2": 0.09290304, "mi2": 2589988.110336},
    "volume": {"l": 1, "ml": 0.001, "m3": 1000, "gal": 3.785411784, "bbl": 158.987294928, "ft3": 28.316846592},
    "pressure": {"pa": 1, "kpa": 1e3, "mpa": 1e6, "bar": 1e5, "atm": 101325, "psi": 6894.757293168},
    "speed": {"m/s": 1, "km/h": 1 / 3.6, "mph": 0.44704, "kn": 1852 / 3600},
}
_TEMPERATURES = {"c", "f", "k"}


class ConvertUnits(CustomTool):
    name = "convert_units"
    description = (
        "Convert a value between units of the same kind: length, mass, energy (J, kWh, MJ, Btu, toe, ...), "
        "power, time, area, volume, pressure, speed, and temperature (C, F, K). Unit symbols are "
        "case-insensitive, e.g. 'kWh', 'mi', 'km/h'. Returns the converted value; no citation needed."
    )

    def run(self, value: float, from_unit: str, to_unit: str) -> dict:
        source, target = from_unit.strip().lower(), to_unit.strip().lower()
        if {source, target} <= _TEMPERATURES:
            result = _from_kelvin(_to_kelvin(value, source), target)
        else:
            kind = next((k for k, units in _FACTORS.items() if source in units and target in units), None)
            if kind is None:
                raise ToolFailure.permanent(
                    f"cannot convert {from_unit!r} to {to_unit!r}: the units are unknown or of different kinds. "
                    f"Known units: {', '.join(sorted(u for units in _FACTORS.values() for u in units))}, C, F, K."
                )
            result = value * _FACTORS[kind][source] / _FACTORS[kind][target]
        return {"value": value, "from": from_unit, "to": to_unit, "result": float(f"{result:.10g}")}


def _to_kelvin(value: float, unit: str) -> float:
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[unit]


def _from_kelvin(kelvin: float, unit: str) -> float:
    return {"c": kelvin - 273.15, "f": (kelvin - 273.15) * 9 / 5 + 32, "k": kelvin}[unit]
