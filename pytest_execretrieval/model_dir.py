"""A sentence-transformers model directory named by a user (``ce:DIR``, ``st:DIR``, a training
base) is untrusted input: one from a pull request or a download can be pointed at as easily as
one ``execretrieval train`` wrote. sentence-transformers and transformers import what its
configuration names (``modules.json`` module classes by dotted path, a Dense or CrossEncoder
activation, ``auto_map`` code) and unpickle what it holds, so :func:`check_model_dir` reads the
configuration itself (bounded JSON) before anything is loaded, and refuses, naming the file and
the reason, a directory that

* holds code (Python, a native library, an executable file), a pickle (``*.bin``, ``*.pt``, ...),
  weights other than ``model.safetensors``, a folder that is a symbolic link, a PEFT adapter or
  a processor configuration;
* or whose configuration names what to import or call: ``auto_map``, ``trust_remote_code`` and
  the other keys of :data:`CODE_KEYS` at any depth, an architecture, model type or tokenizer
  class outside the encoders the trainer writes, a ``modules.json`` module outside the kind's
  (:data:`KINDS`), a module configuration key the module does not take, an activation other
  than the kind's, loader arguments in ``sentence_bert_config.json``.

One implementation, two kinds of directory:

* ``cross-encoder`` (``ce:DIR``): the one Transformer module (sequence classification, one
  output) and the activation a CrossEncoder applies to its score (torch's ``Sigmoid`` or
  ``Identity``; the caller builds it itself, so the configuration's is never imported);
* ``bi-encoder`` (``st:DIR``): the modules the trainer and the packaged models write, each
  loaded by sentence-transformers from its own configuration: the Transformer (feature
  extraction), ``Pooling``, ``Normalize`` and ``Dense`` (whose ``activation_function`` may be
  only torch's ``Tanh`` or ``Identity``, and whose weights only its ``model.safetensors``).

The caller then loads with remote code off and safetensors only (:func:`load_kwargs`). Imports
nothing of the package but :mod:`.bounded_json`.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bounded_json import JSONBoundError, read_json

__all__ = [
    "BI_ENCODER",
    "CROSS_ENCODER",
    "KINDS",
    "ModelDirError",
    "check_model_dir",
    "load_kwargs",
]

CROSS_ENCODER = "cross-encoder"
BI_ENCODER = "bi-encoder"

WEIGHTS = "model.safetensors"
MAX_CONFIG_BYTES = 1 << 20  # config.json and the sentence-transformers files: a few KB
MAX_TOKENIZER_CONFIG_BYTES = 16 << 20  # added tokens and a chat template can be long
MAX_ENTRIES = 10_000  # files and folders walked

# the encoders a trained model is (the trainer's bases: minilm, mpnet, or an st:DIR embedder's
# transformer), by config.json's model_type: the one-output sequence classifier a cross-encoder
# is; a bi-encoder's architectures are its family's (BertModel, MPNetForMaskedLM, ...)
ARCHITECTURES = {
    "bert": "BertForSequenceClassification",
    "mpnet": "MPNetForSequenceClassification",
    "roberta": "RobertaForSequenceClassification",
    "xlm-roberta": "XLMRobertaForSequenceClassification",
    "distilbert": "DistilBertForSequenceClassification",
    "electra": "ElectraForSequenceClassification",
    "deberta-v2": "DebertaV2ForSequenceClassification",
    "modernbert": "ModernBertForSequenceClassification",
}
FAMILIES = {t: a.removesuffix("ForSequenceClassification") for t, a in ARCHITECTURES.items()}
TOKENIZER_CLASSES = frozenset(
    {"PreTrainedTokenizerFast", "TokenizersBackend"}
    | {
        f"{family}Tokenizer{fast}"
        for family in (
            "Bert",
            "MPNet",
            "Roberta",
            "XLMRoberta",
            "DistilBert",
            "Electra",
            "DebertaV2",
        )
        for fast in ("", "Fast")
    }
)
# the activation a saved CrossEncoder records (sentence-transformers imports and calls it): only
# these two, each applied as the caller's own instance
ACTIVATIONS = {
    "torch.nn.modules.activation.Sigmoid": "Sigmoid",
    "torch.nn.Sigmoid": "Sigmoid",
    "torch.nn.modules.linear.Identity": "Identity",
    "torch.nn.Identity": "Identity",
}
# a Dense module's activation_function (sentence-transformers imports it): its default, Tanh,
# and Identity, what a Dense the trainer carries over from its base can hold
DENSE_ACTIVATIONS = frozenset(
    {
        "torch.nn.modules.activation.Tanh",
        "torch.nn.Tanh",
        "torch.nn.modules.linear.Identity",
        "torch.nn.Identity",
    }
)
# modules.json types, by the module they are (each as sentence-transformers 6 writes it and as
# earlier versions did)
MODULE_TYPES = {
    "sentence_transformers.base.modules.transformer.Transformer": "Transformer",
    "sentence_transformers.models.Transformer": "Transformer",
    "sentence_transformers.sentence_transformer.modules.pooling.Pooling": "Pooling",
    "sentence_transformers.models.Pooling": "Pooling",
    "sentence_transformers.base.modules.normalize.Normalize": "Normalize",
    "sentence_transformers.models.Normalize": "Normalize",
    "sentence_transformers.base.modules.dense.Dense": "Dense",
    "sentence_transformers.models.Dense": "Dense",
}
MODULE_ENTRY_KEYS = frozenset({"idx", "name", "path", "type"})
# what each module after the Transformer reads of its folder's config.json (its constructor's
# arguments, legacy spellings included); values are plain JSON scalars or lists of them
MODULE_CONFIG_KEYS = {
    "Pooling": frozenset(
        {
            "embedding_dimension",
            "word_embedding_dimension",
            "pooling_mode",
            "include_prompt",
            "pooling_mode_cls_token",
            "pooling_mode_mean_tokens",
            "pooling_mode_max_tokens",
            "pooling_mode_mean_sqrt_len_tokens",
            "pooling_mode_weightedmean_tokens",
            "pooling_mode_lasttoken",
        }
    ),
    "Normalize": frozenset({"module_input_name", "module_output_name"}),
    "Dense": frozenset(
        {
            "in_features",
            "out_features",
            "bias",
            "activation_function",
            "module_input_name",
            "module_output_name",
            "use_residual",
        }
    ),
}
MODULE_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
DTYPES = frozenset({"float32", "float16", "bfloat16"})
# keys, at any depth of a config, that choose code to import or how to load it
CODE_KEYS = frozenset(
    {
        "auto_map",
        "trust_remote_code",
        "custom_pipelines",
        "quantization_config",
        "attn_implementation",
        "_attn_implementation",
        "processor_class",
        "feature_extractor_type",
        "image_processor_type",
        "base_model_name_or_path",
    }
)
# files that name another model (a PEFT adapter's base) or a processor class to load
FOREIGN_FILES = {
    "adapter_config.json": "a PEFT adapter, which loads another model",
    "processor_config.json": "a processor configuration, which names a class to load",
    "preprocessor_config.json": "a processor configuration, which names a class to load",
    "video_preprocessor_config.json": "a processor configuration, which names a class to load",
    "model.safetensors.index.json": "a sharded-weights index (only model.safetensors is loaded)",
}
SENTENCE_CONFIGS = (
    "sentence_bert_config.json",
    "sentence_roberta_config.json",
    "sentence_distilbert_config.json",
    "sentence_camembert_config.json",
    "sentence_albert_config.json",
    "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
)
SENTENCE_CONFIG_KEYS = frozenset(
    {"transformer_task", "modality_config", "module_output_name", "max_seq_length", "do_lower_case"}
)
CODE_SUFFIXES = {
    **dict.fromkeys((".py", ".pyc", ".pyo", ".pyw", ".pyz", ".ipynb"), "Python code"),
    **dict.fromkeys((".so", ".pyd", ".dll", ".dylib"), "a native library"),
    **dict.fromkeys(
        (".sh", ".bash", ".exe", ".bat", ".cmd", ".ps1", ".js", ".mjs"), "an executable file"
    ),
    **dict.fromkeys(
        (".bin", ".pkl", ".pickle", ".pt", ".pth", ".ckpt", ".joblib", ".npy", ".npz"),
        "a pickle (only model.safetensors is loaded, never a pickle)",
    ),
    **dict.fromkeys(
        (".safetensors", ".h5", ".hdf5", ".keras", ".msgpack", ".onnx", ".gguf"),
        "weights other than model.safetensors (the only weights loaded)",
    ),
}


@dataclass(frozen=True)
class DirKind:
    """What one kind of model directory may be: how messages name it (``label``), what it is
    (``what``), config_sentence_transformers.json's ``model_type``, the Transformer's task and
    output, and the modules that may follow the Transformer in ``modules.json``."""

    label: str
    what: str
    model_type: str
    task: str
    output: str
    modules: frozenset[str]


KINDS = {
    CROSS_ENCODER: DirKind(
        label="a ce:DIR",
        what="a CrossEncoder",
        model_type="CrossEncoder",
        task="sequence-classification",
        output="logits",
        modules=frozenset(),
    ),
    BI_ENCODER: DirKind(
        label="an st:DIR",
        what="a SentenceTransformer",
        model_type="SentenceTransformer",
        task="feature-extraction",
        output="last_hidden_state",
        modules=frozenset({"Pooling", "Normalize", "Dense"}),
    ),
}


def load_kwargs() -> dict[str, Any]:
    """The keyword arguments a ``SentenceTransformer`` or ``CrossEncoder`` of a checked
    directory is built with: remote code off, local files only, safetensors only (a fresh dict
    each time: sentence-transformers edits ``model_kwargs``)."""
    return {
        "trust_remote_code": False,
        "local_files_only": True,
        "model_kwargs": {"use_safetensors": True},
    }


class ModelDirError(ValueError):
    """A model directory that is refused: what it holds or its configuration would choose code
    to run, or it is not a model of the kind asked for."""


def check_model_dir(path: Path, kind: str = CROSS_ENCODER) -> str:
    """Check the model directory ``path`` of ``kind`` (:data:`CROSS_ENCODER` or
    :data:`BI_ENCODER`) before anything loads it (see the module's docstring); the activation a
    CrossEncoder built from it applies (``Sigmoid`` or ``Identity``: a bi-encoder's fresh
    one-output head gets ``Sigmoid`` unless its config.json records another), or
    :class:`ModelDirError` naming the file and the reason."""
    path, spec = Path(path), KINDS[kind]
    files = _files(path)
    dense = _check_modules(path, spec)
    weights = {WEIGHTS, *(f"{folder}/{WEIGHTS}" for folder in dense)}
    _check_files(path, files, weights)
    for name in sorted(weights):
        if name not in files:
            raise ModelDirError(f"{path} holds no {name} (the only weights {spec.label} loads)")
    config = _config(path / "config.json", spec, required=True)
    activation = _check_transformers_config(config, spec)
    st_config = _config(path / "config_sentence_transformers.json", spec)
    if st_config is not None:
        _refuse_code_keys(st_config, "config_sentence_transformers.json", spec)
        model_type = st_config.get("model_type", spec.model_type)
        if model_type != spec.model_type:
            raise ModelDirError(
                f"config_sentence_transformers.json: model_type {model_type!r}; {spec.label} is "
                f"{spec.what} ({spec.model_type!r})"
            )
        named = _activation(st_config, "activation_fn", "config_sentence_transformers.json", spec)
        if kind == CROSS_ENCODER:  # sentence-transformers' own order; a bi-encoder's is unread
            activation = named or activation
    for name in SENTENCE_CONFIGS:
        sentence_config = _config(path / name, spec)
        if sentence_config is not None:
            _check_sentence_config(sentence_config, name, spec)
    tokenizer = _config(path / "tokenizer_config.json", spec, MAX_TOKENIZER_CONFIG_BYTES)
    if tokenizer is not None:
        _refuse_code_keys(tokenizer, "tokenizer_config.json", spec)
        _check_tokenizer_class(tokenizer, "tokenizer_config.json", spec)
    return activation or "Sigmoid"  # a one-output CrossEncoder's default


def _walk(path: Path) -> Iterator[tuple[Path, os.stat_result, bool]]:
    """Every entry under ``path`` with its stat (symbolic links followed, but never walked
    into) and whether it is a symbolic link, at most :data:`MAX_ENTRIES`."""
    count, pending = 0, [path]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise ModelDirError(f"cannot list {folder}: {exc.strerror or exc}") from None
        for entry in entries:
            count += 1
            if count > MAX_ENTRIES:
                raise ModelDirError(f"{path} holds more than {MAX_ENTRIES:,} files and folders")
            try:
                info = entry.stat(follow_symlinks=True)
            except OSError:  # a dangling link: nothing would load it
                continue
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            yield Path(entry.path), info, entry.is_symlink()


def _files(path: Path) -> dict[str, os.stat_result]:
    """The regular files under ``path`` by relative name; a special file or a folder that is a
    symbolic link (whose content the walk would not see) is refused."""
    files = {}
    for file, info, link in _walk(path):
        name = file.relative_to(path).as_posix()
        if stat.S_ISDIR(info.st_mode):
            if link:
                raise ModelDirError(f"{path} holds {name}: a symbolic link to a folder; refused")
            continue
        if not stat.S_ISREG(info.st_mode):
            raise ModelDirError(f"{path} holds {name}: not a regular file; refused")
        files[name] = info
    return files


def _check_files(path: Path, files: dict[str, os.stat_result], weights: set[str]) -> None:
    for name, info in sorted(files.items()):
        suffix = os.path.splitext(name)[1].lower()
        reason = CODE_SUFFIXES.get(suffix)
        if name in weights:
            reason = None
        elif name in FOREIGN_FILES:
            reason = FOREIGN_FILES[name]
        elif reason is None and info.st_mode & 0o111:
            reason = "an executable file"
        if reason:
            raise ModelDirError(f"{path} holds {name}: {reason}; refused")


def _config(file: Path, spec: DirKind, max_bytes: int = MAX_CONFIG_BYTES, required: bool = False):
    if not file.is_file():
        if required:
            raise ModelDirError(f"{file.parent} holds no {file.name} (not {spec.what})")
        return None
    expect = list if file.name == "modules.json" else dict
    try:
        return read_json(file, expect=expect, max_bytes=max_bytes)
    except JSONBoundError as exc:
        raise ModelDirError(f"unreadable {file.name}: {exc}") from None


def _refuse_code_keys(value: Any, where: str, spec: DirKind, trail: str = "") -> None:
    """:class:`ModelDirError` for a key of :data:`CODE_KEYS` anywhere in ``value`` (the file
    ``where``)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in CODE_KEYS:
                raise ModelDirError(
                    f"{where}: {trail}{key} chooses code or a model to load; {spec.label} is "
                    "loaded with remote code off and refuses it"
                )
            _refuse_code_keys(inner, where, spec, f"{trail}{key}.")
    elif isinstance(value, list):
        for inner in value:
            _refuse_code_keys(inner, where, spec, trail)


def _activation(config: dict, key: str, where: str, spec: DirKind) -> str | None:
    named = config.get(key)
    if named is None:
        return None
    if named not in ACTIVATIONS:
        raise ModelDirError(
            f"{where}: {key} {named!r} is not an activation {spec.label} applies "
            "(torch.nn Sigmoid or Identity); refused"
        )
    return ACTIVATIONS[named]


def _check_tokenizer_class(config: dict, where: str, spec: DirKind) -> None:
    named = config.get("tokenizer_class")
    if named is not None and named not in TOKENIZER_CLASSES:
        raise ModelDirError(
            f"{where}: tokenizer_class {named!r} is not a tokenizer {spec.label} loads "
            f"({', '.join(sorted(TOKENIZER_CLASSES))})"
        )


def _check_transformers_config(config: dict, spec: DirKind) -> str | None:
    """config.json: an encoder of :data:`ARCHITECTURES` (a cross-encoder's with one output),
    nothing that picks code; the activation it records (pre-v4 sentence-transformers kept it
    there), if any."""
    _refuse_code_keys(config, "config.json", spec)
    model_type = config.get("model_type")
    if model_type not in ARCHITECTURES:
        raise ModelDirError(
            f"config.json: model_type {model_type!r} is not an encoder {spec.label} loads "
            f"({', '.join(sorted(ARCHITECTURES))})"
        )
    architectures = config.get("architectures")
    if spec.model_type == "CrossEncoder":
        if architectures != [ARCHITECTURES[model_type]]:
            raise ModelDirError(
                f"config.json: architectures {architectures!r}; {spec.label} of model_type "
                f"{model_type!r} loads only [{ARCHITECTURES[model_type]!r}]"
            )
    elif architectures is not None and not (
        isinstance(architectures, list)
        and all(
            isinstance(a, str) and re.fullmatch(f"{FAMILIES[model_type]}[A-Za-z]*", a)
            for a in architectures
        )
    ):
        raise ModelDirError(
            f"config.json: architectures {architectures!r}; {spec.label} of model_type "
            f"{model_type!r} names only {FAMILIES[model_type]} classes"
        )
    _check_tokenizer_class(config, "config.json", spec)
    for key in ("dtype", "torch_dtype"):
        if config.get(key) is not None and config[key] not in DTYPES:
            raise ModelDirError(
                f"config.json: {key} {config[key]!r} is not one of {', '.join(sorted(DTYPES))}"
            )
    if spec.model_type == "CrossEncoder":
        labels = config.get("id2label")
        outputs = len(labels) if isinstance(labels, dict) else config.get("num_labels", 2)
        if outputs != 1:
            raise ModelDirError(
                f"config.json: a classifier with {outputs} outputs; {spec.label} scores with "
                "one (num_labels=1, as the trainer writes)"
            )
    nested = config.get("sentence_transformers")
    activation = None
    if isinstance(nested, dict):
        activation = _activation(
            nested, "activation_fn", "config.json: sentence_transformers", spec
        )
    elif nested is not None:
        raise ModelDirError("config.json: sentence_transformers is not an object")
    # where sentence-transformers before version 4 kept it
    old = _activation(config, "sbert_ce_default_activation_function", "config.json", spec)
    return activation or old


def _check_modules(path: Path, spec: DirKind) -> list[str]:
    """modules.json: the Transformer at the top, then only the kind's modules, each in a folder
    of its own whose config.json (:func:`_check_module_config`) names nothing to import; the
    folders of its Dense modules (whose weights may be loaded)."""
    modules = _config(path / "modules.json", spec)
    if modules is None:  # sentence-transformers builds a Transformer and mean pooling itself
        return []
    allowed = {"Transformer", *spec.modules}
    listed = (
        f"the Transformer module, then {', '.join(sorted(spec.modules))} modules"
        if spec.modules
        else "one, the Transformer module"
    )
    if not modules or (not spec.modules and len(modules) != 1):
        raise ModelDirError(
            f"modules.json lists {len(modules)} modules; {spec.label} loads {listed}, as the "
            "trainer writes"
        )
    dense, seen = [], set()
    for number, module in enumerate(modules):
        if not isinstance(module, dict) or set(module) - MODULE_ENTRY_KEYS:
            keys = ", ".join(sorted(MODULE_ENTRY_KEYS))
            raise ModelDirError(f"modules.json: entry {number} is not an object of {keys}")
        what = MODULE_TYPES.get(str(module.get("type")))
        folder = module.get("path")
        first = number == 0
        if (
            what is None
            or (what == "Transformer") != first
            or (what != "Transformer" and what not in spec.modules)
            or not isinstance(folder, str)
            or (folder != "" if first else not MODULE_PATH.fullmatch(folder) or folder in seen)
        ):
            types = ", ".join(t for t, w in MODULE_TYPES.items() if w in allowed)
            raise ModelDirError(
                f"modules.json names module {module.get('type')!r} at {folder!r}; {spec.label} "
                f"loads only {listed} ({types}; the Transformer first, at path '', each other "
                "module in a folder of its own)"
            )
        seen.add(folder)
        if what in MODULE_CONFIG_KEYS:
            _check_module_config(path / folder, what, spec)
        if what == "Dense":
            dense.append(folder)
    return dense


def _check_module_config(folder: Path, what: str, spec: DirKind) -> None:
    where = f"{folder.name}/config.json"
    config = _config(folder / "config.json", spec, required=what == "Dense")
    if config is None:
        return
    unknown = sorted(set(config) - MODULE_CONFIG_KEYS[what])
    if unknown:
        raise ModelDirError(
            f"{where}: {', '.join(unknown)} (not arguments of the {what} module {spec.label} "
            f"loads); it reads only {', '.join(sorted(MODULE_CONFIG_KEYS[what]))}"
        )
    for key, value in config.items():
        values = value if isinstance(value, list) else [value]
        if not all(v is None or isinstance(v, (str, int, float)) for v in values):
            raise ModelDirError(f"{where}: {key} is not a plain value; refused")
    named = config.get("activation_function")
    if named is not None and named not in DENSE_ACTIVATIONS:
        raise ModelDirError(
            f"{where}: activation_function {named!r} is not an activation {spec.label} loads "
            "(torch.nn Tanh or Identity); refused"
        )


def _check_sentence_config(config: dict, where: str, spec: DirKind) -> None:
    unknown = sorted(set(config) - SENTENCE_CONFIG_KEYS)
    if unknown:
        raise ModelDirError(
            f"{where}: {', '.join(unknown)} (loader arguments or code {spec.label} does not "
            f"take); it reads only {', '.join(sorted(SENTENCE_CONFIG_KEYS))}"
        )
    task = config.get("transformer_task", spec.task)
    if task != spec.task:
        raise ModelDirError(
            f"{where}: transformer_task {task!r}; {spec.label} is a {spec.task} model"
        )
    modality = {"text": {"method": "forward", "method_output_name": spec.output}}
    if config.get("modality_config", modality) != modality:
        raise ModelDirError(
            f"{where}: modality_config {config['modality_config']!r} names methods to call; "
            f"{spec.label} calls only {modality!r}"
        )
