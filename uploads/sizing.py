"""How a file is cut into parts: the part size follows from the file size alone."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024
MIN_PART_SIZE = 8 * MIB
MAX_PARTS = 10_000


@dataclass(frozen=True)
class PartPlan:
    size: int
    part_size: int
    part_count: int

    def part_length(self, number: int) -> int:
        """The exact length of part ``number`` (1-based): partSize, or the remainder last."""
        if number < self.part_count:
            return self.part_size
        return self.size - (self.part_count - 1) * self.part_size


def plan_parts(size: int) -> PartPlan:
    """The smallest part size that is at least 8 MiB, a whole number of MiB, and keeps the
    count within 10,000 parts; every part but the last is exactly that size.

    Whole MiB keep sizes readable and aligned; 5 TiB gives 525 MiB parts (9,987 of them),
    well under S3's 5 GiB part limit.
    """
    if size < 1:
        raise ValueError("a multipart upload has at least one byte")
    per_part = -(-size // MAX_PARTS)  # ceil
    part_size = max(MIN_PART_SIZE, -(-per_part // MIB) * MIB)
    return PartPlan(size=size, part_size=part_size, part_count=-(-size // part_size))
