-- Argo CD health of a kafkabalancer.io BrokerPool, read from the conditions the operator writes.
-- Progressing: the operator has not reported on this generation yet, a plan is executing, or an
-- Auto pool has work left. Degraded: Ready is False (the reason and message say why). Suspended:
-- spec.paused, or a Manual pool's plan waits for its approval. Healthy otherwise.
local hs = {status = "Progressing", message = "Waiting for the operator to report on the pool"}

if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local conditions = {}
for _, condition in ipairs(obj.status.conditions) do
  conditions[condition.type] = condition
end
local ready = conditions["Ready"]
if ready == nil then
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end

local function said(condition)
  if condition.message ~= nil and condition.message ~= "" then
    return condition.reason .. ": " .. condition.message
  end
  return condition.reason
end

if ready.status ~= "True" then
  hs.status = "Degraded"
  hs.message = said(ready)
  return hs
end
local executing = conditions["Executing"]
if executing ~= nil and executing.status == "True" then
  hs.message = said(executing)
  return hs
end
if obj.spec ~= nil and obj.spec.paused == true then
  hs.status = "Suspended"
  hs.message = "spec.paused is true: nothing is planned or moved"
  return hs
end
local approval = conditions["ApprovalValid"]
if approval ~= nil and approval.reason == "AwaitingApproval" then
  hs.status = "Suspended"
  hs.message = said(approval)
  return hs
end
local balanced = conditions["Balanced"]
local mode = obj.spec ~= nil and obj.spec.mode or nil
if balanced ~= nil and balanced.status ~= "True" and mode == "Auto" then
  hs.message = said(balanced)
  return hs
end
hs.status = "Healthy"
if balanced ~= nil then
  hs.message = said(balanced)
else
  hs.message = said(ready)
end
return hs
