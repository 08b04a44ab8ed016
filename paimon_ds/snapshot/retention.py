"""How long snapshots and changelogs are kept: Paimon's ExpireConfig, read from a table's options.

`snapshot.num-retained.min` / `.max`, `snapshot.time-retained` and `snapshot.expire.limit` bound snapshot expiry;
`changelog.num-retained.min` / `.max` and `changelog.time-retained` default to the snapshot ones. When one of
them keeps the changelog longer than the snapshots (CoreOptions.changelogLifecycleDecoupled), an expiring
snapshot leaves `changelog/changelog-<id>` behind and the changelog expires on its own terms.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..options.registry import OptionError, Options


@dataclass(frozen=True)
class Retention:
    snapshot_min: int
    snapshot_max: int
    snapshot_time_ms: int
    max_deletes: int  # snapshot.expire.limit: snapshots (and changelogs) one run may expire
    changelog_min: int
    changelog_max: int
    changelog_time_ms: int
    # the changelog outlives its snapshots (CoreOptions.changelogLifecycleDecoupled): judged on the table's
    # options, so that a procedure's arguments do not change what the commits after it do with the changelog
    changelog_decoupled: bool

    @staticmethod
    def from_options(options: Options, retain_min: int | None = None, retain_max: int | None = None,
                     time_retained_ms: int | None = None, max_deletes: int | None = None) -> Retention:
        """The table's retention; a procedure's arguments replace the snapshot settings (Paimon 1.x's
        ProcedureUtils.fillInSnapshotOptions). The changelog settings (unset: the table's snapshot ones, as
        CoreOptions.changelogNumRetainMin...) and whether the changelog is decoupled always come from the table,
        so that a procedure and the commits after it treat the changelog alike (Paimon's procedure never keeps
        a changelog: there it would be lost to a procedure run on a table that keeps it)."""
        snapshot_min = options.get("snapshot.num-retained.min")
        snapshot_max = options.get("snapshot.num-retained.max")
        snapshot_time = options.get("snapshot.time-retained")
        changelog_min = options.get("changelog.num-retained.min")
        changelog_max = options.get("changelog.num-retained.max")
        changelog_time = options.get("changelog.time-retained")
        changelog_min = snapshot_min if changelog_min is None else changelog_min
        changelog_max = snapshot_max if changelog_max is None else changelog_max
        changelog_time = snapshot_time if changelog_time is None else changelog_time
        return Retention(
            snapshot_min=snapshot_min if retain_min is None else retain_min,
            snapshot_max=snapshot_max if retain_max is None else retain_max,
            snapshot_time_ms=snapshot_time if time_retained_ms is None else time_retained_ms,
            max_deletes=options.get("snapshot.expire.limit") if max_deletes is None else max_deletes,
            changelog_min=changelog_min,
            changelog_max=changelog_max,
            changelog_time_ms=changelog_time,
            changelog_decoupled=(changelog_max > snapshot_max or changelog_min > snapshot_min
                                 or changelog_time > snapshot_time),
        )

    def check(self) -> None:
        """Paimon's checks (SchemaValidation; ExpireSnapshotsImpl's `retainMax >= retainMin`)."""
        for what, low, high in (("snapshot", self.snapshot_min, self.snapshot_max),
                                ("changelog", self.changelog_min, self.changelog_max)):
            if low < 1:
                raise OptionError(f"{what}.num-retained.min should be at least 1, got {low} (snapshot retention "
                                  "needs 1 <= min <= max)")
            if high < low:
                raise OptionError(f"{what}.num-retained.min ({low}) should not be larger than "
                                  f"{what}.num-retained.max ({high}) (snapshot retention needs 1 <= min <= max)")


def check_retention(options: Options) -> None:
    """Refuse a table whose retention options Paimon refuses (SchemaValidation), before anything is written."""
    Retention.from_options(options).check()
