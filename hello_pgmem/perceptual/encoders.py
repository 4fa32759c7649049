"""Encoders that turn a media file into a vector, one embedding space per modality and model.

Out of the box, each modality has a real, simple encoder that runs offline:

- image: colour histogram (HSV, 8×4×4 bins, square-rooted) and a 64-bit difference hash of the
  grey image, from Pillow and numpy. It finds the same picture again, resized, recompressed or
  lightly edited, and pictures with similar colours; it knows nothing of what is shown.
- audio: the log energy of a WAV file in 48 frequency bands (mean and spread over time), from
  the standard ``wave`` module and numpy's FFT. It finds the same recording and sounds with a
  similar spectrum (a tone, a voice, a noise); it does not recognise words or melodies.

With ``transformers`` installed and local weights named by ``CLIP_MODEL`` / ``CLAP_MODEL`` (a
folder; nothing is downloaded), CLIP encodes images and CLAP audio instead.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import logging
import os
import wave
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

from hello_pgmem.core.errors import ConfigurationError, InvalidInputError

log = logging.getLogger(__name__)

IMAGE_EXTENSIONS = {"png", "jpg", "jpeg", "bmp", "gif", "webp", "tif", "tiff"}
AUDIO_EXTENSIONS = {"wav", "mp3", "flac", "m4a", "ogg"}
VIDEO_EXTENSIONS = {"mp4", "mov", "avi", "mkv", "webm"}
TEXT_EXTENSIONS = {"txt", "text", "md", "markdown", "rst", "log", "csv", "json", "html", "htm", "xml"}
MAX_FILE_BYTES = 200 * 1024 * 1024


def infer_modality(file_path: str) -> str | None:
    """image, audio, video or text from the file extension; None for an extension none of them has."""
    extension = Path(file_path).suffix.lower().lstrip(".")
    if extension in IMAGE_EXTENSIONS:
        return "image"
    if extension in AUDIO_EXTENSIONS:
        return "audio"
    if extension in VIDEO_EXTENSIONS:
        return "video"
    return "text" if extension in TEXT_EXTENSIONS else None


def read_media(file_path: str) -> tuple[Path, bytes]:
    """The file's absolute path and bytes, or an InvalidInputError naming the file."""
    path = Path(file_path).expanduser().resolve()
    if not path.exists():
        raise InvalidInputError("file_path", f"no such file: {file_path!r}")
    if not path.is_file():
        raise InvalidInputError("file_path", f"{file_path!r} is not a regular file")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InvalidInputError("file_path", f"{file_path!r} is larger than {MAX_FILE_BYTES} bytes")
        return path, path.read_bytes()
    except OSError as exc:
        raise InvalidInputError("file_path", f"cannot read {file_path!r}: {exc.strerror}") from exc


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class MediaEncoder(ABC):
    """A file of one modality to an L2-normalised vector."""

    modality: str
    model_name: str
    dimension: int

    @abstractmethod
    def _encode(self, path: Path, data: bytes) -> np.ndarray: ...

    def encode_file(self, file_path: str) -> np.ndarray:
        path, data = read_media(file_path)
        vector = np.asarray(self._encode(path, data), dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        if vector.shape != (self.dimension,) or not np.isfinite(norm) or norm == 0:
            raise InvalidInputError("file_path", f"{file_path!r} gave no usable {self.modality} features")
        result: np.ndarray = vector / norm
        return result


class ImageFeatureEncoder(MediaEncoder):
    """Colour histogram plus difference hash (Pillow + numpy); 192 dimensions."""

    modality = "image"
    model_name = "image-features-v1-192"
    dimension = 192

    def _encode(self, path: Path, data: bytes) -> np.ndarray:
        import io

        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                rgb = image.convert("RGB")
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise InvalidInputError("file_path", f"{str(path)!r} is not a readable image: {exc}") from exc
        hsv = np.asarray(rgb.resize((64, 64)).convert("HSV"), dtype=np.int32)
        bins = (hsv[..., 0] * 8 // 256) * 16 + (hsv[..., 1] * 4 // 256) * 4 + (hsv[..., 2] * 4 // 256)
        histogram = np.bincount(bins.ravel(), minlength=128).astype(np.float64)
        histogram = np.sqrt(histogram / histogram.sum())
        grey = np.asarray(rgb.convert("L").resize((9, 8)), dtype=np.float64)
        dhash = np.where(grey[:, 1:] > grey[:, :-1], 1.0, -1.0).ravel() / 8.0
        return np.concatenate([histogram, dhash * 0.5])


class WavSpectrumEncoder(MediaEncoder):
    """Band energies of a WAV file's spectrum (mean and spread over time); 96 dimensions."""

    modality = "audio"
    model_name = "audio-spectrum-v1-96"
    dimension = 96
    bands = 48

    def _encode(self, path: Path, data: bytes) -> np.ndarray:
        import io

        try:
            with wave.open(io.BytesIO(data)) as wav:
                rate, width, channels = wav.getframerate(), wav.getsampwidth(), wav.getnchannels()
                frames = wav.readframes(wav.getnframes())
        except (wave.Error, EOFError) as exc:
            raise InvalidInputError("file_path", f"{str(path)!r} is not a readable WAV file: {exc}") from exc
        dtype = {1: np.uint8, 2: np.int16, 4: np.int32}.get(width)
        if dtype is None or not frames:
            raise InvalidInputError("file_path", f"{str(path)!r}: unsupported or empty WAV data")
        samples = np.frombuffer(frames, dtype=dtype).astype(np.float64)
        if width == 1:
            samples -= 128
        samples = samples.reshape(-1, channels).mean(axis=1)
        frame, hop = 2048, 1024
        if len(samples) < frame:
            samples = np.pad(samples, (0, frame - len(samples)))
        windows = np.lib.stride_tricks.sliding_window_view(samples, frame)[::hop] * np.hanning(frame)
        power = np.abs(np.fft.rfft(windows, axis=1)) ** 2
        freqs = np.fft.rfftfreq(frame, 1.0 / rate)
        edges = np.geomspace(40.0, min(16000.0, rate / 2), self.bands + 1)
        energies = np.stack(
            [power[:, (freqs >= lo) & (freqs < hi)].sum(axis=1) for lo, hi in itertools.pairwise(edges)],
            axis=1,
        )
        log_energy = np.log1p(energies / (power.sum(axis=1, keepdims=True) + 1e-12) * 1000)
        return np.concatenate([log_energy.mean(axis=0), log_energy.std(axis=0)])


class TransformersEncoder(MediaEncoder):
    """CLIP (images) or CLAP (audio) from a local folder, through ``transformers``."""

    def __init__(self, modality: str, folder: str) -> None:
        if importlib.util.find_spec("transformers") is None:
            raise ConfigurationError("CLIP/CLAP need the transformers package")
        if not Path(folder).is_dir():
            raise ConfigurationError(f"{folder!r} is not a folder of model weights")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # untyped to the checker whether transformers (and its type hints) is installed or not
        transformers: Any = importlib.import_module("transformers")

        self.modality = modality
        self.model_name = f"{'clip' if modality == 'image' else 'clap'}:{Path(folder).name}"
        cls = transformers.CLIPModel if modality == "image" else transformers.ClapModel
        self._model: Any = cls.from_pretrained(folder, local_files_only=True)
        self._processor: Any = transformers.AutoProcessor.from_pretrained(folder, local_files_only=True)
        self.dimension = int(self._model.config.projection_dim)

    def _encode(self, path: Path, data: bytes) -> np.ndarray:
        import io

        import torch

        with torch.no_grad():
            if self.modality == "image":
                from PIL import Image

                inputs = self._processor(
                    images=Image.open(io.BytesIO(data)).convert("RGB"), return_tensors="pt"
                )
                features = self._model.get_image_features(**inputs)
            else:
                import librosa

                audio, _ = librosa.load(io.BytesIO(data), sr=48000, mono=True)
                inputs = self._processor(audios=audio, sampling_rate=48000, return_tensors="pt")
                features = self._model.get_audio_features(**inputs)
        return np.asarray(features[0].cpu().numpy())


def default_encoders() -> dict[str, MediaEncoder]:
    """The encoder of each media modality: CLIP/CLAP when configured, else the built-in ones."""
    encoders: dict[str, MediaEncoder] = {"image": ImageFeatureEncoder(), "audio": WavSpectrumEncoder()}
    for modality, variable in (("image", "CLIP_MODEL"), ("audio", "CLAP_MODEL")):
        folder = os.environ.get(variable)
        if folder:
            try:
                encoders[modality] = TransformersEncoder(modality, folder)
            except (ConfigurationError, OSError, ImportError) as exc:
                log.warning(
                    "%s=%r cannot be loaded (%s); using the built-in %s encoder",
                    variable,
                    folder,
                    exc,
                    modality,
                )
    return encoders
