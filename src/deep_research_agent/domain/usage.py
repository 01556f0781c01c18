"""What one role (or one ``task`` call) of a run spent: the counters the usage event and the ledger carry."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# Cached input tokens cost about a tenth of fresh ones, so the token ceiling weighs them so.
CACHED_TOKEN_WEIGHT = 0.1


class RoleUsage(BaseModel):
    """One role's (or one ``task`` call's) counters."""

    model_config = ConfigDict(extra="forbid")

    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    reported_cost_usd: float = Field(default=0.0, description="Part of the cost the provider reported itself.")

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def budget_tokens(self) -> float:
        """Tokens as the token ceiling counts them: cached input is cheap, so it weighs a tenth."""
        cached = min(self.cached_tokens, self.input_tokens)
        return self.input_tokens - cached + cached * CACHED_TOKEN_WEIGHT + self.output_tokens

    def _add(self, other: RoleUsage) -> None:
        for name in RoleUsage.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))
