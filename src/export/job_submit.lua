-- Slurm job_submit/lua plugin written by `profiler export --format slurm`.
--
-- A job whose comment (sbatch --comment=MODEL) names a model of the demand table and that asks
-- for GPUs gets that model's best-case demand per GPU: cpus_per_tres (--cpus-per-gpu) and
-- mem_per_tres (--mem-per-gpu, MB), written in the TRES syntax of the job's own GPU request
-- ("gres:gpu:N" up to Slurm 22.05, "gres/gpu:N" in later releases). A job without a comment is
-- not touched. A comment that names no model of the table, or a job that asks for no GPU, is
-- reported to the user and the job is left as submitted (never rejected).
-- A job that set --cpus-per-task (or --mem / --mem-per-cpu), which Slurm does not combine with
-- --cpus-per-gpu (--mem-per-gpu), keeps its own CPU (memory) request, and the user is told.
-- The table (model,cpus_per_gpu,mem_mb_per_gpu) is read at each submission, so a new table takes
-- effect at once; if it cannot be read, jobs are left as submitted and slurmctld logs why.

local DEMAND_TABLE = "@DEMAND_TABLE@"

local NO_VAL = slurm.NO_VAL or 4294967294
local NO_VAL16 = slurm.NO_VAL16 or 65534
local NO_VAL64 = slurm.NO_VAL64 or 18446744073709551614

local function is_set(v)
  return v ~= nil and v ~= NO_VAL and v ~= NO_VAL16 and v ~= NO_VAL64
end

-- The prefix the job's own GPU request uses ("gres:gpu:" or "gres/gpu:"), nil if it asks for
-- no GPU.
local function gpu_tres_prefix(job_desc)
  for _, field in ipairs({ "tres_per_job", "tres_per_node", "tres_per_socket", "tres_per_task" }) do
    local v = job_desc[field]
    if type(v) == "string" then
      local sep = v:match("gres([:/])gpu")
      if sep then
        return "gres" .. sep .. "gpu:"
      end
    end
  end
  return nil
end

local function read_demands(path)
  local f, err = io.open(path, "r")
  if not f then
    return nil, err
  end
  local demands = {}
  for line in f:lines() do
    local model, cpus, mb = line:match("^%s*([^,]-)%s*,%s*(%d+)%s*,%s*(%d+)%s*$")
    if model and model ~= "" then
      demands[model] = { cpus = cpus, mb = mb }
    end
  end
  f:close()
  return demands
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local comment = job_desc.comment
  if comment == nil then
    return slurm.SUCCESS
  end
  local model = comment:match("^%s*(.-)%s*$")
  if model == "" then
    return slurm.SUCCESS
  end
  local demands, err = read_demands(DEMAND_TABLE)
  if demands == nil then
    slurm.log_info("profiler demands: cannot read %s: %s; job left as submitted",
      DEMAND_TABLE, tostring(err))
    return slurm.SUCCESS
  end
  local d = demands[model]
  if d == nil then
    slurm.log_user("%s", "profiler demands: no profile for model '" .. model ..
      "' (the job comment); the job keeps its own CPU and memory request")
    return slurm.SUCCESS
  end
  local prefix = gpu_tres_prefix(job_desc)
  if prefix == nil then
    slurm.log_user("%s", "profiler demands: " .. model .. ": the job asks for no GPU " ..
      "(--gpus, --gres=gpu:N, ...); its per-GPU demand is not applied")
    return slurm.SUCCESS
  end
  local applied = {}
  if is_set(job_desc.cpus_per_task) then
    slurm.log_user("%s", "profiler demands: " .. model .. ": the job sets --cpus-per-task, " ..
      "which Slurm does not combine with --cpus-per-gpu=" .. d.cpus .. "; CPUs left as requested")
  else
    job_desc.cpus_per_tres = prefix .. d.cpus
    table.insert(applied, "--cpus-per-gpu=" .. d.cpus)
  end
  if is_set(job_desc.min_mem_per_node) or is_set(job_desc.min_mem_per_cpu) then
    slurm.log_user("%s", "profiler demands: " .. model .. ": the job sets --mem or " ..
      "--mem-per-cpu, which Slurm does not combine with --mem-per-gpu=" .. d.mb ..
      "; memory left as requested")
  else
    job_desc.mem_per_tres = prefix .. d.mb
    table.insert(applied, "--mem-per-gpu=" .. d.mb)
  end
  if #applied > 0 then
    slurm.log_user("%s", "profiler demands: " .. model .. ": " .. table.concat(applied, " "))
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return slurm.SUCCESS
