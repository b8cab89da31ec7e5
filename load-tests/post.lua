-- wrk script: POST the AdmissionReview in the file named by $QM_BODY on every request.
local file = assert(io.open(os.getenv("QM_BODY"), "rb"))
local body = file:read("*a")
file:close()

local req

function init(args)
   req = wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end

function request()
   return req
end
