"""Runtime backends: a local sentence-transformers model served as a team serves it.

``served(embedder, backend)`` wraps ``minilm``, ``mpnet`` or an ``st:PATH`` model in a
:class:`~. DenseEncoder` named ``<embedder>+<backend>`` that encodes through a runtime instead of
torch:

* ``onnx``: the model's ONNX export (float32) in ONNX Runtime;
* ``onnx-int8``: that export dynamically quantised to int8 (ONNX Runtime's quantiser);
* ``openvino``: the float32 ONNX export in OpenVINO, at float32 precision (OpenVINO would
  otherwise compute in bf16 on CPUs that have it).

The export (:mod:`.onnx_export`) is the whole model, pooling and normalisation included, made
locally from the packaged weights and cached by content, so the served encoder applies the same
tokenizer length, prompt, pooling and normalisation as the torch embedder, in batches of the
same size. A batch holds texts of about the same number of tokens: the texts are tokenized first
and batched longest first by tokens, each batch padded to its longest. (Sentence-transformers
batches by characters, and code's tokens per character vary: on the bundled Python pool that
pads its snippets' batches to 1.27x their tokens, against 1.01x by tokens. The attention mask
keeps padding out of every vector, so the order changes float rounding only.) The runtime uses
every core this process may run on (ONNX Runtime's and OpenVINO's intra-op threads), as torch
does.

Why not sentence-transformers' own ``backend="onnx"|"openvino"``: it loads through ``optimum``
(``optimum-onnx``, ``optimum-intel``), and no release of ``optimum-onnx`` accepts transformers 5,
which sentence-transformers 6 requires; exporting with ``torch.onnx.export`` and running the
runtimes directly needs only ``onnx``, ``onnxruntime`` and ``openvino``, none of which depends on
torch or pulls a CUDA build.

The invocation is the torch embedder's plus ``backend``, ``runtime`` (the runtime package and
its version) and ``model_file_sha256`` (the file the runtime reads). That hash is the export's:
the first :meth:`ServedEmbedder.invocation` in a cache directory exports the model (loading
torch once, seconds for MiniLM); every later one reads the export's signed manifest, and the
invocation is the same for the same weights, backend and versions.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import Embedder, EmbedderBase, EmbedderError, check_vectors
from .onnx_export import Export, exported
from .sentence_transformer import SentenceTransformerEmbedder

BACKENDS: tuple[str, ...] = ("onnx", "onnx-int8", "openvino")
# backend -> (the export it serves, the runtime package, the modules it needs, its extra)
_SERVING = {
    "onnx": ("fp32", "onnxruntime", ("onnxruntime", "onnx"), "onnx"),
    "onnx-int8": ("int8", "onnxruntime", ("onnxruntime", "onnx"), "onnx"),
    "openvino": ("fp32", "openvino", ("openvino", "onnx"), "openvino"),
}
Session = Callable[[dict[str, np.ndarray]], np.ndarray]


class BackendError(EmbedderError):
    """A runtime backend cannot serve this embedder here (not a local sentence-transformers
    model, an unknown backend, or its extra not installed)."""


def served(embedder: Embedder, backend: str) -> ServedEmbedder:
    """``embedder`` served through ``backend`` (one of :data:`BACKENDS`); :class:`BackendError`
    for an unknown backend, an embedder that is not a local sentence-transformers model, or a
    backend whose extra is not installed."""
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if not isinstance(embedder, SentenceTransformerEmbedder):
        raise BackendError(
            f"backend {backend!r} serves local sentence-transformers models (minilm, mpnet, "
            f"st:PATH); {embedder.name!r} is not one"
        )
    _require(backend)
    return ServedEmbedder(embedder, backend)


def _require(backend: str) -> None:
    *_, modules, extra = _SERVING[backend]
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            raise BackendError(
                f"backend {backend!r} needs {module}, which is not installed: "
                f'pip install "pytest-execretrieval[{extra}]"'
            ) from None


def threads() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class ServedEmbedder(EmbedderBase):
    """A :class:`~.DenseEncoder`: ``base``'s model through ``backend``'s runtime."""

    def __init__(self, base: SentenceTransformerEmbedder, backend: str) -> None:
        self.base = base
        self.backend = backend
        self.name = f"{base.name}+{backend}"
        self.batch_size = base.batch_size
        self._artifact, self._runtime, *_ = _SERVING[backend]
        self._export: Export | None = None
        self._session: Session | None = None
        self._tokenizer: Any = None

    @property
    def export(self) -> Export:
        if self._export is None:
            self._export = exported(self.base, self._artifact)
        return self._export

    def check_usable(self) -> None:
        self.base.check_usable()
        _require(self.backend)

    def invocation(self) -> dict:
        """The base invocation plus the backend, its runtime and the served file's sha256 (see
        the module docstring: the first call in a cache directory exports the model)."""
        return {
            **self.base.invocation(),
            "backend": self.backend,
            "runtime": f"{self._runtime} {importlib.metadata.version(self._runtime)}",
            "model_file_sha256": self.export.model_sha256,
        }

    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        session, tokenizer = self._load()
        prompt = self.export.prompt
        encoded = tokenizer.encode_batch([prompt + text for text in texts])
        order = np.argsort([-len(e.ids) for e in encoded], kind="stable")
        out = np.empty((len(texts), 0), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            vectors = np.asarray(session(self._inputs([encoded[i] for i in rows])), np.float32)
            if out.shape[1] == 0:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return check_vectors(out, len(texts), self.name)

    def _inputs(self, batch: Sequence[Any]) -> dict[str, np.ndarray]:
        """A batch of encodings as the graph's inputs, each row padded to the batch's longest
        (the pad token's id, attention mask and type id 0 where padded)."""
        width = max(len(e.ids) for e in batch)
        inputs = {}
        for name in self.export.input_names:
            pad = self.export.pad_id if name == "input_ids" else 0
            table = np.full((len(batch), width), pad, dtype=np.int64)
            for row, e in enumerate(batch):
                values = getattr(e, _FIELDS[name])
                table[row, : len(values)] = values
            inputs[name] = table
        return inputs

    def close(self) -> None:
        self._session = self._tokenizer = None
        self.base.close()

    def _load(self) -> tuple[Session, Any]:
        if self._session is None:
            from tokenizers import Tokenizer

            export = self.export
            tokenizer = Tokenizer.from_file(str(export.tokenizer_file))
            tokenizer.enable_truncation(max_length=export.max_seq_length)
            tokenizer.no_padding()  # each batch is padded to its longest (:meth:`_inputs`)
            self._tokenizer = tokenizer
            self._session = _RUNTIMES[self._runtime](str(export.model_file))
        return self._session, self._tokenizer


# The tokenizer's field for each graph input a sentence-transformers text model takes.
_FIELDS = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}


def _onnxruntime(path: str) -> Session:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads()
    # no spin-waiting between ops: on a shared machine a spinning thread takes a core from the
    # work of every other process, this one's other threads included
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return lambda inputs: session.run(None, inputs)[0]


def _openvino(path: str) -> Session:
    import openvino

    compiled = openvino.Core().compile_model(
        path, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads()}
    )
    return lambda inputs: compiled(inputs)[0]


_RUNTIMES: dict[str, Callable[[str], Session]] = {
    "onnxruntime": _onnxruntime,
    "openvino": _openvino,
}
