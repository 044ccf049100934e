"""A local sentence-transformers model as an ONNX file, exported once and cached by content.

The whole model runs in the graph: transformer, pooling and every later module (Dense,
Normalize), from token ids to the sentence embedding, so a runtime computes what
``SentenceTransformer.encode`` computes; the tokenizer travels beside it as the model's fast
tokenizer file, with the length and padding the model used (:class:`Export`). The export runs
``torch.onnx.export`` (the TorchScript exporter: seconds, one self-contained file) on the model
the torch embedder loads, from its packaged weights, never a hub; ``int8`` is that file
dynamically quantised by ONNX Runtime (int8 weights, activations quantised per batch).

Cache: ``<cache_dir>/backends/<key>/``, where the key hashes the weights' sha256, the model
directory's other files (configuration, pooling, tokenizer), the artifact and the versions of
everything that writes it (:func:`export_key`). An export is written into a fresh temporary
directory and renamed into place, so a reader sees none or all of it; its manifest is a signed
entry (:mod:`..signed_files`: the cache may be committed) naming the sha256 of each file, checked
on every use, so a partial, corrupted or planted export is discarded and exported again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..signed_files import SignedFiles
from . import EmbedderError
from .sentence_transformer import SentenceTransformerEmbedder, file_sha256, weights_file

EXPORT_FORMAT = 1  # bump when the graph's inputs, outputs or the manifest change
ARTIFACTS = ("fp32", "int8")
MAGIC = b"execretrieval-onnx-export1"
MANIFEST = ".export"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MAX_MANIFEST = 1 << 16
MAX_CONFIG_FILE = 16 << 20  # bytes: a larger file beside the weights is not configuration
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")  # the text inputs a runtime fills
# What writes each artifact: the key changes with any of their versions.
WRITERS = {"fp32": ("torch", "onnx"), "int8": ("torch", "onnx", "onnxruntime")}
# int8: per-channel int8 weights, as sentence-transformers' quantisation configurations have them
# (per-tensor scales cost MiniLM a median cosine of 0.95 to float32; per-channel, 0.994)
INT8_WEIGHTS, INT8_PER_CHANNEL = "QInt8", True


class ExportError(EmbedderError):
    """A model could not be exported (an exporter missing or failing on it)."""


@dataclass(frozen=True)
class Export:
    """An exported model: its files and what serving it needs from the torch model."""

    directory: str
    model_sha256: str
    tokenizer_sha256: str
    max_seq_length: int
    input_names: tuple[str, ...]
    pad_id: int
    pad_token: str
    prompt: str  # the model's default prompt, prepended to every text ("" for none)

    @property
    def model_file(self) -> Path:
        return Path(self.directory) / MODEL_FILE

    @property
    def tokenizer_file(self) -> Path:
        return Path(self.directory) / TOKENIZER_FILE


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def config_sha256(model_dir: Path, weights: Path) -> str:
    """The sha256 of every file of ``model_dir`` but the weights (and files too large to be
    configuration): pooling, tokenizer, module list and prompts decide the vectors too."""
    digest = hashlib.sha256()
    for path in sorted(model_dir.rglob("*")):
        if path == weights or not path.is_file() or path.stat().st_size > MAX_CONFIG_FILE:
            continue
        digest.update(str(path.relative_to(model_dir)).encode() + b"\0")
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()


def export_key(embedder: SentenceTransformerEmbedder, artifact: str) -> str:
    """The cache key of ``embedder``'s ``artifact``: its content and its writers' versions."""
    weights = weights_file(embedder.model_dir)
    if weights is None:
        raise ExportError(f"{embedder.name}: {embedder.model_dir} holds no model weights")
    record = {
        "format": EXPORT_FORMAT,
        "artifact": artifact,
        "weights_sha256": embedder.invocation()["weights_sha256"],
        "config_sha256": config_sha256(embedder.model_dir, weights),
        "opset": OPSET,
        "writers": {package: _version(package) for package in WRITERS[artifact]},
        "trust_remote_code": embedder.options.trust_remote_code,
        "quantization": [INT8_WEIGHTS, INT8_PER_CHANNEL] if artifact == "int8" else None,
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def exported(embedder: SentenceTransformerEmbedder, artifact: str) -> Export:
    """``embedder``'s ``artifact`` (``fp32`` or ``int8``) from the cache, exported first when it
    is missing or does not match its signed manifest."""
    if artifact not in ARTIFACTS:
        raise ExportError(f"unknown export {artifact!r}; known: {', '.join(ARTIFACTS)}")
    root = Path(embedder.options.cache_dir) / "backends"
    key = export_key(embedder, artifact)
    target = root / key[:32]
    signed = SignedFiles(root, root.parent, MAGIC)
    found = _intact(target, signed, key)
    if found is not None:
        return found
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=root))
    try:
        export = _write(embedder, artifact, staging)
        body = json.dumps(asdict(export), sort_keys=True).encode()
        signed.write_body(staging / MANIFEST, key, body)
        try:
            os.rename(staging, target)
        except OSError:  # another process put its (equal) export there first
            found = _intact(target, signed, key)
            if found is None:
                raise ExportError(f"could not move the export into {target}") from None
            return found
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return replace(export, directory=str(target))


def _intact(target: Path, signed: SignedFiles, key: str) -> Export | None:
    """The export in ``target`` when its manifest is signed for ``key`` and its files hash to
    what the manifest says; ``None`` (and the directory removed) otherwise."""
    if not target.is_dir():
        return None
    body = signed.read_body(target / MANIFEST, key, MAX_MANIFEST)
    try:
        export = None
        if body is not None:
            fields = {**json.loads(body), "directory": str(target)}
            export = Export(**{**fields, "input_names": tuple(fields["input_names"])})
        if export is not None and (
            file_sha256(export.model_file) == export.model_sha256
            and file_sha256(export.tokenizer_file) == export.tokenizer_sha256
        ):
            return export
    except (OSError, TypeError, ValueError):
        pass
    shutil.rmtree(target, ignore_errors=True)
    return None


def _write(embedder: SentenceTransformerEmbedder, artifact: str, directory: Path) -> Export:
    if artifact == "int8":
        return _quantize(exported(embedder, "fp32"), directory)
    return _export_fp32(embedder, directory)


def _export_fp32(embedder: SentenceTransformerEmbedder, directory: Path) -> Export:
    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
        import torch
    except ImportError as exc:
        extra = "local" if exc.name == "torch" else "onnx"
        raise ExportError(
            f"exporting {embedder.name} to ONNX needs torch and onnx ({exc.name} is missing): "
            f'pip install "pytest-execretrieval[{extra}]"'
        ) from None
    model = embedder._load()
    tokenizer = model.tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ExportError(
            f"{embedder.name}: its tokenizer ({type(tokenizer).__name__}) has no fast "
            "(tokenizers) form, which the runtime backends tokenize with"
        )
    prompt = model.prompts.get(model.default_prompt_name or "", "") or ""
    if prompt and any(getattr(module, "include_prompt", True) is False for module in model):
        raise ExportError(
            f"{embedder.name}: its pooling leaves the prompt's tokens out, which the exported "
            "graph cannot know per text; serve it with torch"
        )
    names = tuple(tokenizer.model_input_names)
    if not set(names) <= set(INPUTS):
        raise ExportError(
            f"{embedder.name}: its tokenizer gives {', '.join(names)}; the runtime backends fill "
            f"{', '.join(INPUTS)}"
        )
    sample = tokenizer(["a b", "a"], padding=True, return_tensors="pt")

    class Graph(torch.nn.Module):
        """Token ids -> the model's sentence embedding (every module of the model)."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            return self.model(dict(zip(names, inputs)))["sentence_embedding"]

    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    with torch.inference_mode():
        torch.onnx.export(
            Graph().eval(),
            tuple(sample[name] for name in names),
            str(directory / MODEL_FILE),
            input_names=list(names),
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,  # the TorchScript exporter: seconds and one file, where dynamo takes
            # minutes and writes the weights beside the graph
        )
    backend.save(str(directory / TOKENIZER_FILE))
    return Export(
        directory=str(directory),
        model_sha256=file_sha256(directory / MODEL_FILE),
        tokenizer_sha256=file_sha256(directory / TOKENIZER_FILE),
        max_seq_length=int(model.max_seq_length),
        input_names=names,
        pad_id=int(tokenizer.pad_token_id or 0),
        pad_token=str(tokenizer.pad_token),
        prompt=prompt,
    )


def _quantize(fp32: Export, directory: Path) -> Export:
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise ExportError(
            'int8 quantisation needs onnxruntime: pip install "pytest-execretrieval[onnx]"'
        ) from None
    quantize_dynamic(
        fp32.model_file,
        directory / MODEL_FILE,
        per_channel=INT8_PER_CHANNEL,
        weight_type=QuantType[INT8_WEIGHTS],
    )
    shutil.copyfile(fp32.tokenizer_file, directory / TOKENIZER_FILE)
    return replace(fp32, directory=str(directory), model_sha256=file_sha256(directory / MODEL_FILE))
