"""Stages 1 and 2: acquisition outcomes and the hard gates.

Every candidate — and the step's own contract item — meets the gates in a fixed order
(permission, scope, required revision, freshness, integrity, trust-role compatibility,
security); one that fails is excluded with the gate and the reason, one that passes is
admitted into the assembly state. Nothing later can rescue a failed gate.

| module | holds |
|---|---|
| ``stage`` | the stage: acquisition entries, gating every candidate, redaction records |
| ``gates`` | ``GateRunner``: each gate's check, freshness, effective trust |
| ``security`` | secret and instruction-like text detection, redaction |
| ``needles`` | one hyperscan pass per text answering every literal term scan |
| ``scan`` | where one of a set of words occurs (shared by the scanners) |

See docs/context-engine.md#hard-gates.
"""
