-- Argo CD health of a kafkabalancer.io BalancerGoal, read from the Satisfied condition its pool
-- writes about the cluster as it is now. Healthy: the goal holds. Progressing: no pool has evaluated
-- this generation of the goal yet, or the goal does not hold yet; the pool's own health says whether
-- it is moving towards it (Progressing), waits for an approval (Suspended) or cannot (Degraded). A
-- goal of a DryRun pool that does not hold stays Progressing: nothing will move it.
local hs = {status = "Progressing", message = "Waiting for the pool named in spec.pool to evaluate the goal"}

if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local satisfied = nil
for _, condition in ipairs(obj.status.conditions) do
  if condition.type == "Satisfied" then
    satisfied = condition
  end
end
if satisfied == nil then
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and satisfied.observedGeneration ~= nil and satisfied.observedGeneration < generation then
  hs.message = "Waiting for the pool to evaluate generation " .. generation
  return hs
end
if satisfied.status == "True" then
  hs.status = "Healthy"
end
hs.message = satisfied.message
return hs
