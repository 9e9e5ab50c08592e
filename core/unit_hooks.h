// The seam between the model and the distributed engine. The model calls these around each
// unit (embeddings, each block, final layernorm) so that ZeRO can gather a unit's parameters
// before it runs and reduce its gradient right after backward produces it, without the model
// knowing about ranks or the engine knowing about layers. The default does nothing: one
// process, everything resident.
#pragma once

namespace sixnd {

class UnitHooks {
public:
    virtual ~UnitHooks() = default;
    virtual void before_forward(int /*unit*/) {}
    virtual void after_forward(int /*unit*/) {}
    virtual void before_backward(int /*unit*/) {}
    virtual void after_backward(int /*unit*/) {}
};

}  // namespace sixnd
