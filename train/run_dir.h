// The run directory a `sixnd train` writes (--out), locked for the whole run (core/dir_lock.h),
// its checkpoints claimed by one run lineage, and the agreement of ranks on checks rank 0 makes.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dir_lock.h"
#include "dist/comm.h"

namespace sixnd {

// Runs `work` on rank 0 only; every rank learns whether it threw (comm may be null: one process),
// so that no rank goes on alone into collectives. Rank 0 rethrows its error, the others an
// AgreedError pointing at rank 0 (which only rank 0 prints: the job says why once).
void on_root_agreed(Comm* comm, const std::function<void()>& work);

// Runs `work` on every rank, for checks every rank makes alike (the same checkpoint files, the
// same flags), so that a fault is printed once and no rank goes on alone (comm may be null). A
// failing rank rethrows its own error unless rank 0 failed too (then the cause is shared and
// rank 0's says it: it throws an AgreedError, which only rank 0 prints); a rank that did not
// fail throws one that points at the lowest that did.
void on_all_agreed(Comm* comm, const std::function<void()>& work);

// What make() returns, made on every rank under on_all_agreed: a rank that cannot make it (its
// node-local copy of a file missing or damaged) stops every rank at once, where the others went
// on into a collective and the job ended only by the lone-failure abort, 30 s later.
template <class T>
T made_on_all(Comm* comm, const std::function<T()>& make) {
    std::optional<T> made;
    on_all_agreed(comm, [&] { made.emplace(make()); });
    return std::move(*made);
}

// Throws Error("--out", ...) where `out` cannot be a run directory: it, or its checkpoints
// entry, exists and is not a directory. Writes nothing (sixnd train --check).
void check_run_dir(const std::string& out);

// Rank 0 checks (check_run_dir) and locks `out` (on_root_agreed): a directory, or nothing yet, whose checkpoints
// entry, if any, is a directory that takes a new checkpoint. Null on the other ranks, each of
// which must then see rank 0's lock there (the same directory, not a node-local one).
std::unique_ptr<DirLock> lock_run_dir(const std::string& out, Comm* comm);

// A run directory belongs to one run lineage (a fresh run and every resume of it, see
// CheckpointMeta::run_id). Throws Error("--out", ...) when the checkpoint root holds step
// directories of another lineage, unless `overwrite`, when it returns them (with any finished
// checkpoint whose meta.json cannot be read, which is otherwise an Error naming that file);
// throws Error naming a step entry that is a symlink or a file (refuse_foreign_step_entries),
// overwrite or not. Rank 0 only, under the lock. The caller deletes what it returns (delete_other_runs) once
// every other check of the run has passed: a run refused for another reason (a --log that is no
// run log, a tokenizer without <|endoftext|>) must not have taken the older run's checkpoints.
std::vector<std::string> claim_checkpoints(const std::string& root, const std::string& run_id, bool overwrite);
void delete_other_runs(const std::string& root, const std::vector<std::string>& dirs);

// A fresh lineage's id: 16 hex digits that differ between any two runs.
std::string new_run_id();

}  // namespace sixnd
