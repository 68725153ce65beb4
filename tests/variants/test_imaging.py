"""The pipeline itself: every fit and format, orientation, modes, and refusals, decoded."""

from __future__ import annotations

import contextlib
import tempfile
from unittest import mock

import pytest
from PIL import Image, ImageChops, features

from tests.variants.images import (
    BLUE,
    GREEN,
    RED,
    alpha,
    animated_gif,
    animated_webp,
    close,
    corrupt_png,
    decoded,
    encode,
    halves,
    jpeg_with_orientation,
    png_bomb,
    stripes,
    truncated_jpeg,
)
from variants import imaging, spng, wuffs
from variants.imaging import ImageRejected, Params, render

CAP = 100_000_000


def test_the_installed_pillow_reads_and_writes_every_format() -> None:
    assert features.check("webp") and features.check("avif") and features.check("jpg")


@pytest.mark.parametrize(
    ("fit", "expected"),
    [
        ("cover", (100, 100)),
        ("contain", (100, 100)),
        ("fill", (100, 100)),
        ("inside", (100, 33)),
        ("outside", (300, 100)),
    ],
)
def test_each_fit_gives_its_dimensions(fit: str, expected: tuple[int, int]) -> None:
    source = encode(stripes((300, 100)), "PNG")
    out = render(source, Params(100, 100, fit, "png"), max_pixels=CAP)
    image = decoded(out.data)
    assert image.size == expected == (out.width, out.height)


def test_cover_crops_the_centre() -> None:
    out = decoded(
        render(encode(stripes(), "PNG"), Params(50, 50, "cover", "png"), max_pixels=CAP).data
    )
    assert close(out.convert("RGB").getpixel((2, 25)), GREEN)
    assert close(out.convert("RGB").getpixel((47, 25)), GREEN)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
@pytest.mark.parametrize("size", [(1, 11), (7, 21), (30, 29), (11, 1)])
def test_a_cover_crop_spanning_a_whole_side_renders(fmt: str, size: tuple[int, int]) -> None:
    """A box whose crop spans the image's whole height (or width) is made, whatever rounding
    the division leaves (these sizes of a 40x30 image, as 400x1032 of a 4000x3000 photo, once
    failed as "corrupt")."""
    source = encode(stripes((40, 30)), fmt)
    out = render(source, Params(*size, "cover", "png"), max_pixels=CAP)
    assert decoded(out.data).size == size


def test_contain_letterboxes_transparently_and_on_white_for_jpeg() -> None:
    source = encode(stripes(), "PNG")
    webp = decoded(render(source, Params(90, 90, "contain", "webp"), max_pixels=CAP).data)
    assert webp.mode == "RGBA"
    assert alpha(webp, (45, 2)) == 0  # the band above the picture is transparent
    assert close(webp.getpixel((45, 45)), GREEN)
    jpeg = decoded(render(source, Params(90, 90, "contain", "jpeg"), max_pixels=CAP).data)
    assert close(jpeg.getpixel((45, 2)), (255, 255, 255), 10)


def test_fill_stretches_every_stripe() -> None:
    out = decoded(
        render(encode(stripes(), "PNG"), Params(30, 90, "fill", "png"), max_pixels=CAP).data
    )
    assert out.size == (30, 90)
    assert close(out.convert("RGB").getpixel((2, 45)), RED)
    assert close(out.convert("RGB").getpixel((15, 45)), GREEN)
    assert close(out.convert("RGB").getpixel((28, 45)), BLUE)


@pytest.mark.parametrize("fit", ["cover", "contain", "fill", "inside", "outside"])
def test_one_side_given_keeps_the_aspect_ratio(fit: str) -> None:
    source = encode(stripes((300, 100)), "PNG")
    assert decoded(render(source, Params(150, None, fit), max_pixels=CAP).data).size == (150, 50)
    assert decoded(render(source, Params(None, 20, fit), max_pixels=CAP).data).size == (60, 20)


def test_small_images_are_enlarged_to_the_request() -> None:
    out = render(encode(halves((8, 4)), "PNG"), Params(64, None), max_pixels=CAP)
    assert (out.width, out.height) == (64, 32)


@pytest.mark.parametrize(
    ("fmt", "pil_format", "content_type"),
    [
        ("webp", "WEBP", "image/webp"),
        ("jpeg", "JPEG", "image/jpeg"),
        ("png", "PNG", "image/png"),
        ("avif", "AVIF", "image/avif"),
    ],
)
def test_each_format_is_really_that_format(fmt: str, pil_format: str, content_type: str) -> None:
    out = render(encode(halves((400, 200)), "JPEG"), Params(100, 50, "cover", fmt), max_pixels=CAP)
    image = decoded(out.data)
    assert image.format == pil_format and out.content_type == content_type
    assert image.size == (100, 50)
    assert close(image.convert("RGB").getpixel((10, 25)), RED, 60)
    assert close(image.convert("RGB").getpixel((90, 25)), BLUE, 60)


def test_quality_changes_lossy_output() -> None:
    source = encode(stripes((600, 400)).effect_spread(8), "PNG")
    low = render(source, Params(300, None, format="jpeg", quality=10), max_pixels=CAP)
    high = render(source, Params(300, None, format="jpeg", quality=95), max_pixels=CAP)
    assert len(low.data) < len(high.data)


@pytest.mark.parametrize("orientation", [6, 8])
def test_exif_orientation_is_applied(orientation: int) -> None:
    # Stored 40x20, left red / right blue; orientation 6 shows it turned clockwise (red on
    # top), 8 anticlockwise (blue on top).
    out = render(
        jpeg_with_orientation(orientation), Params(20, None, "inside", "png"), max_pixels=CAP
    )
    image = decoded(out.data).convert("RGB")
    assert image.size == (20, 40)
    top, bottom = (RED, BLUE) if orientation == 6 else (BLUE, RED)
    assert close(image.getpixel((10, 5)), top)
    assert close(image.getpixel((10, 35)), bottom)
    assert "exif" not in decoded(out.data).info or 0x0112 not in decoded(out.data).getexif()


def test_a_large_jpeg_is_decoded_at_reduced_scale_and_still_right() -> None:
    source = encode(stripes((4000, 3000)), "JPEG", quality=90)
    out = render(source, Params(256, 256, "inside"), max_pixels=CAP)
    image = decoded(out.data).convert("RGB")
    assert image.size == (256, 192)
    assert close(image.getpixel((128, 96)), GREEN)


def test_a_rotated_jpeg_cover_crop_is_right() -> None:
    # Upright it is 200 wide, 400 tall: red on top, blue below; a square cover crop keeps the
    # middle, where the halves meet.
    out = render(
        jpeg_with_orientation(6, (400, 200)), Params(50, 50, "cover", "png"), max_pixels=CAP
    )
    image = decoded(out.data).convert("RGB")
    assert image.size == (50, 50)
    assert close(image.getpixel((25, 3)), RED) and close(image.getpixel((25, 46)), BLUE)


@pytest.mark.parametrize("mode", ["P", "PA", "LA", "L", "RGBA", "CMYK", "I;16", "1"])
def test_every_source_mode_converts(mode: str) -> None:
    image = stripes((60, 30)).convert("RGBA" if mode == "PA" else mode)
    if mode == "PA":
        image = image.convert("P")
        image.info["transparency"] = 0
    fmt = "JPEG" if mode == "CMYK" else "TIFF" if mode == "I;16" else "PNG"
    for out_format in ("jpeg", "webp"):
        out = render(encode(image, fmt), Params(30, None, format=out_format), max_pixels=CAP)
        assert decoded(out.data).size == (30, 15)


def test_transparency_is_kept_in_webp_and_flattened_in_jpeg() -> None:
    image = Image.new("RGBA", (40, 40), (0, 0, 0, 0))
    image.paste((255, 0, 0, 255), (10, 10, 30, 30))
    source = encode(image, "PNG")
    webp = decoded(render(source, Params(20, None), max_pixels=CAP).data)
    assert webp.mode == "RGBA" and alpha(webp, (1, 1)) == 0
    jpeg = decoded(render(source, Params(20, None, format="jpeg"), max_pixels=CAP).data)
    assert close(jpeg.getpixel((1, 1)), (255, 255, 255), 25)


@pytest.mark.parametrize("source", [animated_gif, animated_webp])
def test_animated_images_give_their_first_frame(source: object) -> None:
    out = render(source(), Params(10, None, format="png"), max_pixels=CAP)  # type: ignore[operator]
    image = decoded(out.data)
    first = RED if source is animated_gif else GREEN
    assert close(image.convert("RGB").getpixel((5, 5)), first)
    assert getattr(image, "n_frames", 1) == 1


def test_a_decompression_bomb_is_refused_from_its_header() -> None:
    with pytest.raises(ImageRejected, match=r"too large|more than"):
        render(png_bomb(), Params(100, None), max_pixels=CAP)
    # Below Pillow's own limit, the service's cap decides.
    with pytest.raises(ImageRejected, match="more than the 1000000"):
        render(png_bomb(5000, 5000), Params(100, None), max_pixels=1_000_000)


def test_an_output_above_the_cap_is_refused() -> None:
    source = encode(halves((1, 400)), "PNG")
    with pytest.raises(ImageRejected, match="output"):
        render(source, Params(4096, None), max_pixels=1_000_000)


@pytest.mark.parametrize(
    "source",
    [corrupt_png(), truncated_jpeg(), b"not an image at all", b"", encode(halves(), "BMP")],
)
def test_corrupt_truncated_and_foreign_bytes_are_refused(source: bytes) -> None:
    with pytest.raises(ImageRejected):
        render(source, Params(10, None), max_pixels=CAP)


@pytest.mark.parametrize(
    ("params", "label"),
    [
        (Params(400, None), "w400_cover_webp_q80"),
        (Params(400, 300), "w400_h300_cover_webp_q80"),
        (Params(None, 300, "inside", "png", 50), "w0_h300_inside_png_q50"),
        (Params(256, 256, "inside", "webp", 80), "w256_h256_inside_webp_q80"),
        (Params(10, 20, "fill", "avif", 1), "w10_h20_fill_avif_q1"),
    ],
)
def test_labels(params: Params, label: str) -> None:
    assert params.label == label


def _render_with(decoders: str, source: bytes, params: Params) -> Image.Image:
    """Render with only some PNG decoders: "wuffs", "spng" (Wuffs off) or "pillow"."""
    with contextlib.ExitStack() as stack:
        if decoders in {"spng", "pillow"}:
            stack.enter_context(mock.patch.object(wuffs, "_decoder", return_value=None))
        if decoders == "pillow":
            stack.enter_context(mock.patch.object(spng, "_library", return_value=None))
        return decoded(render(source, params, max_pixels=CAP).data).convert("RGBA")


@pytest.mark.parametrize("fit", ["cover", "contain", "fill", "inside", "outside"])
@pytest.mark.parametrize("decoders", ["wuffs", "spng"])
def test_png_decoders_give_pillows_pixels(fit: str, decoders: str) -> None:
    # Odd sizes, so the strip-wise reduction's last partial blocks are exercised.
    source = encode(stripes((1001, 777)).effect_spread(3), "PNG")
    params = Params(120, 90, fit, "png")
    assert wuffs._decoder() is not None and spng.available()
    fast = _render_with(decoders, source, params)
    slow = _render_with("pillow", source, params)
    assert fast.size == slow.size
    worst = max(high for _, high in ImageChops.difference(fast, slow).getextrema())  # type: ignore[misc]
    assert worst <= 2  # the same pixels, up to rounding


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "LA", "P", "I;16"])
def test_wuffs_decodes_every_png_kind_like_pillow(mode: str) -> None:
    source = encode(stripes((301, 203)).effect_spread(3).convert(mode), "PNG")
    fast = _render_with("wuffs", source, Params(100, None, format="png"))
    slow = _render_with("pillow", source, Params(100, None, format="png"))
    assert max(high for _, high in ImageChops.difference(fast, slow).getextrema()) <= 2  # type: ignore[misc]


def test_a_huge_png_is_reduced_strip_by_strip() -> None:
    source = encode(stripes((600, 300)), "PNG")
    with (
        mock.patch.object(imaging, "WUFFS_MAX_PIXELS", 1000),
        mock.patch.object(spng, "decode_reduced", wraps=spng.decode_reduced) as strips,
    ):
        out = render(source, Params(60, None, format="png"), max_pixels=CAP)
    assert strips.call_count == 1
    assert close(decoded(out.data).convert("RGB").getpixel((30, 15)), GREEN)


def test_an_interlaced_or_transparent_png_is_right_too() -> None:
    image = stripes((400, 200)).convert("RGBA")
    image.putpixel((0, 0), (0, 0, 0, 0))
    for source in (encode(image, "PNG"), encode(stripes((400, 200)), "PNG", interlace=1)):
        out = decoded(render(source, Params(100, 50, "fill", "png"), max_pixels=CAP).data)
        assert out.size == (100, 50)
        assert close(out.convert("RGB").getpixel((50, 25)), GREEN)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_a_stream_is_rendered_like_bytes(fmt: str) -> None:
    # The worker hands render() its spooled copy of the original, not bytes.
    source = encode(stripes((600, 300)), fmt)
    with tempfile.SpooledTemporaryFile(max_size=1024) as spooled:  # spills to disk
        spooled.write(source)
        spooled.seek(0)
        from_stream = render(spooled, Params(60, None, format="png"), max_pixels=CAP)
    from_bytes = render(source, Params(60, None, format="png"), max_pixels=CAP)
    assert from_stream.data == from_bytes.data


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "AVIF", "GIF", "TIFF"])
def test_every_eligible_source_format_is_read(fmt: str) -> None:
    out = render(encode(stripes((300, 100)), fmt), Params(30, None, format="png"), max_pixels=CAP)
    image = decoded(out.data).convert("RGB")
    assert image.size == (30, 10)
    assert close(image.getpixel((15, 5)), GREEN, 60)
