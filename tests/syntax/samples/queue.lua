-- A double-ended queue used by the job runner.
local json = require("json")
require "strict"

local M = {}
local DEFAULT_CAPACITY = 64

--- Creates an empty queue.
-- @param capacity the initial size hint
function M.new(capacity)
  local self = setmetatable({}, { __index = M })
  self.first = 1
  self.last = 0
  self.items = {}
  self.capacity = capacity or DEFAULT_CAPACITY
  return self
end

function M:push(value)
  self.last = self.last + 1
  self.items[self.last] = value
end

function M:pop()
  if self.first > self.last then
    return nil
  end
  local value = self.items[self.first]
  self.items[self.first] = nil
  self.first = self.first + 1
  return value
end

local function count(queue)
  return queue.last - queue.first + 1
end

M.size = function(queue)
  return count(queue)
end

function M:dump()
  local parts = {}
  for i = self.first, self.last do
    parts[#parts + 1] = json.encode(self.items[i])
  end
  while #parts > 10 do
    table.remove(parts)
  end
  return string.format("[%s]", table.concat(parts, ", "))
end

return M
