"""Part sizing at its edges: at least 8 MiB, whole MiB, at most 10,000 parts."""

from __future__ import annotations

import pytest

from uploads.sizing import MAX_PARTS, MIB, MIN_PART_SIZE, plan_parts

TIB = 1024**4


def test_a_small_file_is_exactly_one_part() -> None:
    plan = plan_parts(1)
    assert (plan.part_size, plan.part_count, plan.part_length(1)) == (MIN_PART_SIZE, 1, 1)


def test_exactly_one_part_size_is_one_full_part() -> None:
    plan = plan_parts(MIN_PART_SIZE)
    assert (plan.part_count, plan.part_length(1)) == (1, MIN_PART_SIZE)


def test_one_byte_more_makes_a_second_part_of_one_byte() -> None:
    plan = plan_parts(MIN_PART_SIZE + 1)
    assert plan.part_count == 2
    assert (plan.part_length(1), plan.part_length(2)) == (MIN_PART_SIZE, 1)


def test_an_exact_multiple_has_a_full_last_part() -> None:
    plan = plan_parts(3 * MIN_PART_SIZE)
    assert plan.part_count == 3
    assert [plan.part_length(n) for n in (1, 2, 3)] == [MIN_PART_SIZE] * 3


def test_ten_thousand_minimum_parts_is_the_last_size_at_the_minimum() -> None:
    plan = plan_parts(MAX_PARTS * MIN_PART_SIZE)
    assert (plan.part_size, plan.part_count) == (MIN_PART_SIZE, MAX_PARTS)


def test_one_byte_past_ten_thousand_parts_grows_the_part_size() -> None:
    plan = plan_parts(MAX_PARTS * MIN_PART_SIZE + 1)
    assert plan.part_size == MIN_PART_SIZE + MIB
    assert plan.part_count <= MAX_PARTS
    assert plan.part_length(plan.part_count) >= 1


def test_the_five_tib_limit_fits_in_ten_thousand_parts_of_whole_mib() -> None:
    plan = plan_parts(5 * TIB)
    assert plan.part_size == 525 * MIB
    assert plan.part_count == 9987
    assert plan.part_size <= 5 * 1024**3  # S3's largest part


@pytest.mark.parametrize(
    "size", [1, MIN_PART_SIZE - 1, 17 * MIB + 3, 80_000 * MIB - 1, 123_456_789_012, 5 * TIB]
)
def test_parts_add_up_to_the_size_with_only_the_last_shorter(size: int) -> None:
    plan = plan_parts(size)
    lengths = [plan.part_length(n) for n in range(1, plan.part_count + 1)]
    assert sum(lengths) == size
    assert all(length == plan.part_size for length in lengths[:-1])
    assert 1 <= lengths[-1] <= plan.part_size
    assert plan.part_size >= MIN_PART_SIZE and plan.part_size % MIB == 0
    assert plan.part_count <= MAX_PARTS


def test_an_empty_file_has_no_plan() -> None:
    with pytest.raises(ValueError):
        plan_parts(0)
