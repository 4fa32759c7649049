"""Media files made by the tests: images with Pillow, WAV files with numpy."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw


def sunset(path: Path, size: tuple[int, int] = (320, 240)) -> Path:
    """An orange-to-purple gradient with a yellow sun."""
    width, height = size
    y = np.linspace(0, 1, height)[:, None]
    pixels = np.zeros((height, width, 3), dtype=np.uint8)
    pixels[..., 0] = (255 * (1 - 0.4 * y)).astype(np.uint8)
    pixels[..., 1] = (140 * (1 - y)).astype(np.uint8)
    pixels[..., 2] = (60 + 120 * y).astype(np.uint8)
    image = Image.fromarray(pixels)
    ImageDraw.Draw(image).ellipse(
        (width * 0.4, height * 0.5, width * 0.6, height * 0.75), fill=(255, 220, 40)
    )
    image.save(path)
    return path


def forest(path: Path, size: tuple[int, int] = (320, 240)) -> Path:
    """Green vertical stripes on dark brown."""
    width, height = size
    image = Image.new("RGB", size, (60, 40, 20))
    draw = ImageDraw.Draw(image)
    for x in range(0, width, 24):
        draw.rectangle((x, 0, x + 12, height), fill=(30, 140 + x % 80, 40))
    image.save(path)
    return path


def resized(source: Path, path: Path, size: tuple[int, int]) -> Path:
    with Image.open(source) as image:
        image.convert("RGB").resize(size).save(path, quality=85)
    return path


def tone(path: Path, frequency: float, seconds: float = 1.0, rate: int = 16000, noise: float = 0.0) -> Path:
    t = np.arange(int(seconds * rate)) / rate
    signal = 0.5 * np.sin(2 * np.pi * frequency * t)
    if noise:
        signal += noise * np.random.default_rng(1).normal(size=t.shape)
    samples = (np.clip(signal, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(samples.tobytes())
    return path
