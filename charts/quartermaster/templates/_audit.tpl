{{/*
Audit-only: every policy document of a file switched to its "warn and report" action.
Platform policies (quartermaster.dev): spec.mode Audit. ValidatingAdmissionPolicyBinding and Kyverno
ValidatingPolicy: validationActions [Audit, Warn]. Kyverno ClusterPolicy/Policy: validationFailureAction
Audit, and failureAction Audit on each validate rule. Other documents pass through unchanged. The file
is re-serialised (comments are lost), which is why this runs only when auditOnly is set.
*/}}
{{- define "quartermaster.auditOnlyPolicies" -}}
{{- $out := list }}
{{- range $raw := regexSplit "(?m)^---[ \\t]*$" . -1 }}
{{- $doc := fromYaml $raw }}
{{- if hasKey $doc "Error" }}
{{- fail (printf "auditOnly: a policy document is not YAML: %s" $doc.Error) }}
{{- end }}
{{- if $doc }}
{{- $apiVersion := $doc.apiVersion | default "" }}
{{- $kind := $doc.kind | default "" }}
{{- $spec := $doc.spec | default dict }}
{{- if hasPrefix "quartermaster.dev/" $apiVersion }}
{{- $_ := set $spec "mode" "Audit" }}
{{- else if or (eq $kind "ValidatingAdmissionPolicyBinding") (and (hasPrefix "policies.kyverno.io/" $apiVersion) (eq $kind "ValidatingPolicy")) }}
{{- $_ := set $spec "validationActions" (list "Audit" "Warn") }}
{{- else if and (hasPrefix "kyverno.io/" $apiVersion) (has $kind (list "ClusterPolicy" "Policy")) }}
{{- $_ := set $spec "validationFailureAction" "Audit" }}
{{- range $rule := $spec.rules | default list }}
{{- if and (kindIs "map" $rule.validate) (hasKey $rule.validate "failureAction") }}
{{- $_ := set $rule.validate "failureAction" "Audit" }}
{{- end }}
{{- end }}
{{- end }}
{{- if $spec }}
{{- $_ := set $doc "spec" $spec }}
{{- end }}
{{- $out = append $out (toYaml $doc) }}
{{- end }}
{{- end }}
{{- join "---\n" $out }}
{{- end }}
