// The seam between the model and the distributed engine. The model calls these around each
// unit (embeddings, each block, final layernorm) so that ZeRO can gather a unit's parameters
// before it runs and reduce its gradient right after backward produces it, without the model
// knowing about ranks or the engine knowing about layers. The default does nothing: one
// process, everything resident.
//
// Order of calls in one forward/backward: forward 0 (embeddings), 1..L (blocks), L+1
// (ln_f), 0 again (the LM head: the tied wte, or an untied lm_head.weight, which lives in the
// embeddings unit too); backward 0 (head; unit 0 stays open), L+1,
// L..1, and after_backward(0) last, once the embedding gradient is complete.
#pragma once
#include <cstddef>

namespace sixnd {

class UnitHooks {
public:
    virtual ~UnitHooks() = default;
    virtual void before_forward(int /*unit*/) {}
    virtual void after_forward(int /*unit*/) {}
    virtual void before_backward(int /*unit*/) {}
    virtual void after_backward(int /*unit*/) {}
};

// Where a unit's parameters and gradients live: the model implements this so an engine can
// point a unit at gathered parameters or a gradient bucket (null leaves a side unchanged).
class UnitMemory {
public:
    virtual ~UnitMemory() = default;
    virtual void map_unit(int unit, void* params, void* grads) = 0;
};

// A unit as the engine sees it: a range of the flat buffers, padding included.
struct UnitSpan {
    size_t begin = 0;
    size_t end = 0;
    size_t size() const { return end - begin; }
};

}  // namespace sixnd
