"""Branches (Paimon 1.x): `branch/branch-<name>/` beside the main branch's own metadata.

A branch has its own `schema/`, `snapshot/` and `tag/` directories under `branch/branch-<name>/`; data files,
manifests and index files are shared, under the table's own directories, whichever branch wrote them. The main
branch (`main`) is the table directory itself. BranchManager creates, deletes, renames and fast-forwards
branches as Paimon's FileSystemBranchManager does:

- create: from a tag (the tag, its snapshot and the schemas up to the snapshot's are copied into the branch, so
  the branch starts at that snapshot), or without one, an *empty* branch holding the current schemas and no
  snapshot (Paimon's "create_branch from the current state" is such an empty branch);
- delete: the branch's directory (its metadata); data files only it wrote become orphans, which
  remove_orphan_files deletes;
- fast-forward: the current branch (main unless the table was opened on a branch) drops its snapshots, schemas
  and tags from the branch's earliest snapshot on and takes the branch's copies.

Names follow Paimon's rules (not `main`, not blank, not only digits); paimon_ds also refuses `/` and `\\`, which
would put the branch's directory elsewhere. Every check runs before anything is written.
"""

from __future__ import annotations

import json
import uuid

from ..errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND, PaimonDsError, reading_file
from ..fs.file_io import FileIO
from ..options.registry import Options
from ..schema.manager import SchemaManager, TableNotFound, TableSchema
from .manager import SnapshotManager

MAIN_BRANCH = "main"
BRANCH_DIR = "branch"
BRANCH_PREFIX = "branch-"
# Fields a tag file adds to its snapshot's (Paimon's Tag.trimToSnapshot drops them).
_TAG_FIELDS = ("tagCreateTime", "tagTimeRetained")


class BranchError(PaimonDsError, ValueError):
    """A branch operation that cannot be done as asked; nothing was changed."""

    exit_code = EXIT_BAD_INPUT


class BranchNotFound(BranchError, LookupError):
    """No such branch in the table."""

    exit_code = EXIT_NOT_FOUND


def normalize_branch(name: str | None) -> str:
    """A branch name as Paimon reads the `branch` option: blank means main; anything else as given."""
    return MAIN_BRANCH if name is None or not str(name).strip() else str(name)


def branch_path(root: str, branch: str) -> str:
    """The directory holding a branch's schema/, snapshot/ and tag/: the table's own for main."""
    return root if branch == MAIN_BRANCH else f"{root}/{BRANCH_DIR}/{BRANCH_PREFIX}{branch}"


def latest_branch_schema(io: FileIO, path: str, branch: str) -> TableSchema | None:
    """The latest schema of ``branch``; None if there is no table. A branch the table lacks is an error."""
    schema = SchemaManager(io, branch_path(io.root, branch)).latest()
    if schema is None and branch != MAIN_BRANCH and SchemaManager(io, io.root).list_ids():
        manager = BranchManager(io, io.root)
        manager.require(branch)  # raises BranchNotFound naming the branches there are
        raise BranchError(f"branch {branch!r} of {path} has no schema file (an interrupted creation?): "
                          "delete it and create it again")
    return schema


def load_branch_schema(io: FileIO, path: str, branch: str) -> TableSchema:
    """The latest schema of ``branch`` of the table at ``path``; TableNotFound when there is no table."""
    schema = latest_branch_schema(io, path, branch)
    if schema is None:
        if io.exists(io.root) and io.list_names(io.root):
            raise TableNotFound(f"{path} exists but is not a Paimon table (no schema/schema-N file)")
        raise TableNotFound(f"no Paimon table at {path}")
    return schema


def check_new_branch_name(name: str) -> None:
    """Paimon's BranchManager.validateBranch, plus no path separators."""
    if name == MAIN_BRANCH:
        raise BranchError(f"branch name '{MAIN_BRANCH}' is the default branch and cannot be used")
    if name is None or not str(name).strip():
        raise BranchError(f"branch name {name!r} is blank")
    if name.isdigit():
        raise BranchError(f"branch name cannot be a pure numeric string but is {name!r}")
    if "/" in name or "\\" in name:
        raise BranchError(f"branch name {name!r} must not contain '/' or '\\' (it names a directory)")


class BranchManager:
    """The branches of the table at ``root``; ``current`` is the branch the table was opened on (the one
    fast_forward moves, and whose tags create takes)."""

    def __init__(self, io: FileIO, root: str, current: str = MAIN_BRANCH) -> None:
        self.io = io
        self.root = root.rstrip("/")
        self.current = normalize_branch(current)

    def path(self, branch: str) -> str:
        return branch_path(self.root, branch)

    def branches(self) -> list[str]:
        """Names of the branches other than main, sorted."""
        names = self.io.list_names(f"{self.root}/{BRANCH_DIR}")
        return sorted(n[len(BRANCH_PREFIX):] for n in names if n.startswith(BRANCH_PREFIX))

    def exists(self, branch: str) -> bool:
        return branch == MAIN_BRANCH or branch in self.branches()

    def require(self, branch: str) -> None:
        if not self.exists(branch):
            raise BranchNotFound(f"branch {branch!r} does not exist in table {self.root} "
                                 f"(branches: {', '.join([MAIN_BRANCH, *self.branches()])})")

    def schemas(self, branch: str) -> SchemaManager:
        return SchemaManager(self.io, self.path(branch))

    def snapshots(self, branch: str) -> SnapshotManager:
        return SnapshotManager(self.io, self.path(branch))

    # ---------------------------------------------------------------- create
    def create(self, name: str, tag: str | None = None, ignore_if_exists: bool = False) -> bool:
        """Create branch ``name``: from ``tag`` of the current branch, or empty (the current schemas, no
        snapshot). Returns False if it existed and ``ignore_if_exists``."""
        if ignore_if_exists and name is not None and self.exists(str(name)):
            return False
        check_new_branch_name(name)
        if self.exists(name):
            raise BranchError(f"branch {name!r} already exists in table {self.root}")
        source = self.snapshots(self.current)
        source_schemas = self.schemas(self.current)
        tag_text = None
        if tag is not None:
            tag_path = f"{source.tag_dir}/tag-{tag}"
            try:
                tag_text = self.io.read_text(tag_path)
            except FileNotFoundError:
                raise BranchNotFound(f"tag {tag!r} does not exist in branch {self.current!r} of table "
                                     f"{self.root} (tags: {', '.join(source.tag_names()) or 'none'})") from None
            with reading_file(tag_path, "tag", len(tag_text)):
                snapshot_obj = json.loads(tag_text)
                schema_id, snapshot_id = int(snapshot_obj["schemaId"]), int(snapshot_obj["id"])
        else:
            latest = source_schemas.latest()
            if latest is None:
                raise BranchNotFound(f"no Paimon table at {self.root}")
            schema_id = latest.id
        files: dict[str, bytes] = {}  # relative path in the branch -> content, read before anything is written
        for sid in source_schemas.list_ids():
            if sid <= schema_id:
                files[f"schema/schema-{sid}"] = self.io.read_bytes(source_schemas.path(sid))
        if tag is not None:
            if self.io.exists(source.path(snapshot_id)):
                snapshot_bytes = self.io.read_bytes(source.path(snapshot_id))
            else:  # the snapshot expired; the tag kept its content (Paimon writes it from the tag)
                trimmed = {k: v for k, v in snapshot_obj.items() if k not in _TAG_FIELDS}
                snapshot_bytes = json.dumps(trimmed, indent=2).encode()
            files[f"snapshot/snapshot-{snapshot_id}"] = snapshot_bytes
            files[f"tag/tag-{tag}"] = tag_text.encode()
        if self.io.is_local:
            self._create_by_rename(name, files)
        else:
            self._create_in_place(name, files)
        return True

    def _create_by_rename(self, name: str, files: dict[str, bytes]) -> None:
        """On local disk the branch appears whole or not at all: its files go into a hidden directory
        (`branch/.branch-<name>.<uuid>.tmp`, which no listing takes for a branch), renamed into place at the end."""
        staging = f"{self.root}/{BRANCH_DIR}/.{BRANCH_PREFIX}{name}.{uuid.uuid4().hex}.tmp"
        try:
            for rel, data in files.items():
                self.io.write_bytes(f"{staging}/{rel}", data)
            self.io.rename(staging, self.path(name))
        except FileExistsError:
            self._discard(staging)
            raise BranchError(f"branch {name!r} already exists in table {self.root}") from None
        except BaseException:
            self._discard(staging)
            raise

    def _discard(self, staging: str) -> None:
        try:
            self.io.delete_tree(staging)
        except OSError:
            pass  # hidden, and older than its margin remove_orphan_files deletes it

    def _create_in_place(self, name: str, files: dict[str, bytes]) -> None:
        """On an object store (no rename) the files are written where they belong: schemas first, the first one
        created only if absent (of two creations of one name at once only one goes on), so that the branch's
        snapshot never names a schema it lacks. A creation stopped half-way leaves a branch to delete and create
        again (BranchError says so), as Paimon's does."""
        first = True
        target = self.path(name)
        for rel, data in files.items():
            if first:
                if not self.io.try_create(f"{target}/{rel}", data):
                    raise BranchError(f"branch {name!r} already exists in table {self.root}")
                first = False
            else:
                self.io.write_bytes(f"{target}/{rel}", data)

    # ---------------------------------------------------------------- delete / rename
    def _check_not_read_through(self, name: str, action: str) -> None:
        """Paimon refuses to delete the branch that main's scan.fallback-branch (or scan.primary-branch) names."""
        main = self.schemas(MAIN_BRANCH).latest()
        for key in ("scan.fallback-branch", "scan.primary-branch"):
            if main is not None and Options(main.options).get(key) == name:
                raise BranchError(f"cannot {action} branch {name!r} because it is configured as {key!r}; "
                                  f"unset {key!r} first")

    def check_drop(self, name: str) -> None:
        """Raise if branch ``name`` cannot be deleted."""
        if name == MAIN_BRANCH:
            raise BranchError(f"the main branch of {self.root} cannot be deleted")
        if name is None or not str(name).strip():
            raise BranchError(f"branch name {name!r} is blank")
        self.require(name)
        self._check_not_read_through(name, "delete")

    def drop(self, name: str) -> None:
        """Delete a branch's metadata (schema/, snapshot/, tag/); its own data files become orphans. On local disk
        the branch goes at once (renamed to a hidden directory, then deleted)."""
        self.check_drop(name)
        if self.io.is_local:
            doomed = f"{self.root}/{BRANCH_DIR}/.{BRANCH_PREFIX}{name}.{uuid.uuid4().hex}.tmp"
            self.io.rename(self.path(name), doomed)
            self._discard(doomed)
        else:
            self.io.delete_tree(self.path(name))

    def rename(self, source: str, target: str) -> None:
        """Rename a branch (its directory), as Paimon's rename_branch."""
        if source == MAIN_BRANCH:
            raise BranchError("the main branch cannot be renamed")
        self.require(source)
        check_new_branch_name(target)
        if self.exists(target):
            raise BranchError(f"branch {target!r} already exists in table {self.root}")
        self._check_not_read_through(source, "rename")
        if self.io.is_local:
            self.io.rename(self.path(source), self.path(target))
        else:
            self.io.fs.mv(self.path(source), self.path(target), recursive=True)

    # ---------------------------------------------------------------- fast-forward
    def fast_forward(self, name: str) -> None:
        """Make the current branch (main) what branch ``name`` is: the current branch's snapshots, schemas and
        tags from the branch's earliest snapshot on are replaced by the branch's (Paimon's fastForward).
        Data files are not deleted: those only the replaced snapshots used become orphans."""
        if name == MAIN_BRANCH:
            raise BranchError(f"branch '{MAIN_BRANCH}' cannot be fast-forwarded into another branch")
        if name is None or not str(name).strip():
            raise BranchError(f"branch name {name!r} is blank")
        if name == self.current:
            raise BranchError(f"fast-forward from the current branch {name!r} is not allowed")
        self.require(name)
        branch = self.snapshots(name)
        earliest = branch.earliest_id()
        if earliest is None:
            raise BranchError(f"cannot fast-forward branch {name!r}: it has no snapshot")
        earliest_schema = branch.snapshot(earliest).schema_id
        here, here_schemas = self.snapshots(self.current), self.schemas(self.current)
        branch_schemas = self.schemas(name)
        # everything of the branch read first
        schemas = {sid: self.io.read_bytes(branch_schemas.path(sid)) for sid in branch_schemas.list_ids()}
        snapshots = {sid: self.io.read_bytes(branch.path(sid)) for sid in branch.list_ids()}
        tags = {tag: self.io.read_bytes(f"{branch.tag_dir}/tag-{tag}") for tag in branch.tag_names()}
        # Not atomic, as Paimon's is not: stopped half-way, the current branch reads one of its older snapshots
        # (run it again to finish), never a table without its schema. Readers first lose the LATEST hint (they list
        # instead), then the replaced snapshots, newest first, and tags; the branch's schemas then replace the
        # current ones in place (never none: those up to the branch's creation are the same), the current
        # branch's later schemas go, and the branch's snapshots (oldest first) and tags come
        self.io.delete(f"{here.dir}/LATEST")
        for sid in sorted((i for i in here.list_ids() if i >= earliest), reverse=True):
            self.io.delete(here.path(sid))
        for tag in here.tag_names():
            if here.tag(tag).id >= earliest:
                self.io.delete(f"{here.tag_dir}/tag-{tag}")
        for sid, data in sorted(schemas.items()):
            self.io.write_bytes(here_schemas.path(sid), data)
        for sid in sorted(here_schemas.list_ids(), reverse=True):
            if sid >= earliest_schema and sid not in schemas:
                self.io.delete(here_schemas.path(sid))
        for sid, data in sorted(snapshots.items()):
            self.io.write_bytes(here.path(sid), data)
        for tag, data in tags.items():
            self.io.write_bytes(f"{here.tag_dir}/tag-{tag}", data)
        ids = here.list_ids()
        if ids:
            self.io.write_bytes(f"{here.dir}/EARLIEST", str(ids[0]).encode())
            self.io.write_bytes(f"{here.dir}/LATEST", str(ids[-1]).encode())
