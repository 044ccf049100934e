"""Git repositories the history tests make, commit by commit, with fixed authors and dates."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    """``git ARGS`` in ``repo`` (``stdin`` its input), authored by A at a fixed date; its
    output, stripped."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.org",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.org",
        "GIT_AUTHOR_DATE": "2026-01-02T03:04:05+01:00",
        "GIT_COMMITTER_DATE": "2026-01-02T03:04:05+01:00",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, input=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, subject: str, files: dict[str, str | bytes]) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            path.unlink()
        elif isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def drop_object(repo: Path, sha: str) -> None:
    """Delete the loose object ``sha`` (a fresh repository packs nothing)."""
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()


def partial_clone(repo: Path, remote: str, uploadpack: str) -> None:
    """Declare ``repo`` a partial clone of ``remote`` (a local path, so the file transport:
    allowed by the repository's own config), whose upload-pack command is ``uploadpack``: a
    missing object makes git fetch it lazily, running that command through a shell."""
    for key, value in (
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "upstream"),
        ("remote.upstream.url", remote),
        ("remote.upstream.promisor", "true"),
        ("remote.upstream.partialCloneFilter", "blob:none"),
        ("remote.upstream.uploadpack", uploadpack),
        ("protocol.allow", "always"),
        ("protocol.file.allow", "always"),
    ):
        git(repo, "config", key, value)


def with_author_line(repo: Path, author_tail: str) -> str:
    """Rewrite HEAD's commit object so its author line ends ``author_tail`` (``EPOCH +HHMM``,
    anything git itself would refuse to write); the new HEAD."""
    raw = git(repo, "cat-file", "commit", "HEAD") + "\n"
    head, _, message = raw.partition("\n\n")
    lines = [
        line.rsplit(" ", 2)[0] + " " + author_tail if line.startswith("author ") else line
        for line in head.split("\n")
    ]
    body = "\n".join(lines) + "\n\n" + message
    sha = git(repo, "hash-object", "-t", "commit", "-w", "--literally", "--stdin", stdin=body)
    git(repo, "update-ref", "HEAD", sha)
    return sha
