{{/* Names ----------------------------------------------------------------------------------------- */}}
{{- define "quartermaster.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "quartermaster.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "quartermaster.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "quartermaster.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: quartermaster
{{- end }}

{{- define "quartermaster.selectorLabels" -}}
app.kubernetes.io/name: {{ include "quartermaster.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "quartermaster.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "quartermaster.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "quartermaster.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "quartermaster.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "external" }}
{{- required "certificates.external.secretName is required with certificates.mode=external" .Values.certificates.external.secretName }}
{{- else }}
{{- printf "%s-tls" (include "quartermaster.fullname" .) }}
{{- end }}
{{- end }}

{{- define "quartermaster.serviceHost" -}}
{{- printf "%s.%s.svc" (include "quartermaster.fullname" .) .Release.Namespace }}
{{- end }}

{{/* The DNS names of the serving certificate: every form a client may use for the Service. */}}
{{- define "quartermaster.dnsNames" -}}
{{- $svc := include "quartermaster.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson }}
{{- end }}

{{- define "quartermaster.validateValues" -}}
{{- if not (has .Values.clusterState (list "live" "standalone")) }}
{{- fail "clusterState must be live or standalone" }}
{{- end }}
{{- if not (has .Values.certificates.mode (list "builtin" "certManager" "external")) }}
{{- fail "certificates.mode must be builtin, certManager or external" }}
{{- end }}
{{- range $hook := list "mutate" "validate" }}
{{- if not (has (index $.Values.webhooks $hook).failurePolicy (list "Fail" "Ignore")) }}
{{- fail (printf "webhooks.%s.failurePolicy must be Fail or Ignore" $hook) }}
{{- end }}
{{- end }}
{{- $t := int .Values.webhooks.timeoutSeconds }}
{{- if or (lt $t 1) (gt $t 30) }}
{{- fail "webhooks.timeoutSeconds must be between 1 and 30" }}
{{- end }}
{{- range $i, $cidr := .Values.networkPolicy.apiServerCIDRs }}
{{- if not (regexMatch "^([0-9]{1,3}[.]){3}[0-9]{1,3}/[0-9]{1,2}$|^[0-9a-fA-F:]*:[0-9a-fA-F:.]*/[0-9]{1,3}$" (toString $cidr)) }}
{{- fail (printf "networkPolicy.apiServerCIDRs[%d]: %q is not a CIDR (address/prefix, e.g. 10.0.0.0/24)" $i (toString $cidr)) }}
{{- end }}
{{- end }}
{{- if not (has .Values.policyReports.format (list "wgpolicyk8s" "openreports")) }}
{{- fail "policyReports.format must be wgpolicyk8s or openreports" }}
{{- end }}
{{- if and (eq .Values.clusterState "standalone") (gt (int .Values.replicaCount) 1) }}
{{- fail "clusterState=standalone keeps quota state in one process's memory: set replicaCount to 1 (or use live)" }}
{{- end }}
{{- end }}

{{/* Webhook registration ------------------------------------------------------------------------- */}}
{{- define "quartermaster.failurePolicy" -}}
{{- if .root.Values.auditOnly }}Ignore{{ else }}{{ .hook.failurePolicy }}{{ end }}
{{- end }}

{{- define "quartermaster.namespaceSelector" -}}
{{- $excluded := concat (list .Release.Namespace) .Values.webhooks.excludedNamespaces | uniq }}
{{- $expressions := list
      (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" $excluded)
      (dict "key" .Values.webhooks.optOutLabel "operator" "NotIn" "values" (list "disabled")) }}
{{- $expressions = concat $expressions (.Values.webhooks.namespaceSelector.matchExpressions | default list) }}
{{- $selector := dict "matchExpressions" $expressions }}
{{- with .Values.webhooks.namespaceSelector.matchLabels }}
{{- $_ := set $selector "matchLabels" . }}
{{- end }}
{{- toYaml $selector }}
{{- end }}

{{/* CEL: does this container ask for a GPU (an extended resource with one of the prefixes)? */}}
{{- define "quartermaster.celContainerGpu" -}}
{{- $tests := list }}
{{- range .Values.webhooks.relevanceFilter.gpuResourcePrefixes }}
{{- $tests = append $tests (printf "r.startsWith(%s)" (. | squote)) }}
{{- end }}
{{- if .Values.webhooks.relevanceFilter.anyExtendedResource }}
{{- $tests = append $tests "(r.contains('/') && !r.startsWith('kubernetes.io/'))" }}
{{- end }}
{{- $any := join " || " $tests | default "false" -}}
has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, {{ $any }})) || (has(c.resources.requests) && c.resources.requests.exists(r, {{ $any }})))
{{- end }}

{{/* CEL: does the pod ask for GPUs, through legacy limits or DRA claims? */}}
{{- define "quartermaster.celGpuPod" -}}
{{- $c := include "quartermaster.celContainerGpu" . -}}
object.spec.containers.exists(c, {{ $c }}) || (has(object.spec.initContainers) && object.spec.initContainers.exists(c, {{ $c }})) || (has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0)
{{- end }}

{{- define "quartermaster.celNotebookPod" -}}
{{- $tests := list }}
{{- range .Values.webhooks.relevanceFilter.podLabels }}
{{- $tests = append $tests (printf "%s in object.metadata.labels" (. | squote)) }}
{{- end -}}
(has(object.metadata.labels) && ({{ join " || " $tests | default "false" }}))
{{- end }}

{{/* "true" when the relevance filter applies to this webhook: on overall and not turned off for it. A hook
without the key (values reused from a release before it existed) keeps the filter. */}}
{{- define "quartermaster.filtered" -}}
{{- if and .root.Values.webhooks.relevanceFilter.enabled (ne (toString .hook.relevanceFilter) "false") }}true{{ end }}
{{- end }}

{{- define "quartermaster.mutateMatchConditions" -}}
{{- $conditions := list }}
{{- if include "quartermaster.filtered" (dict "root" . "hook" .Values.webhooks.mutate) }}
{{- $expr := printf "request.resource.resource != 'pods' || %s || %s" (include "quartermaster.celGpuPod" .) (include "quartermaster.celNotebookPod" .) }}
{{- $conditions = append $conditions (dict "name" "gpu-or-notebook-pods" "expression" $expr) }}
{{- end }}
{{- $conditions = concat $conditions .Values.webhooks.mutate.matchConditions }}
{{- toYaml $conditions }}
{{- end }}

{{/* CEL: does the pod read a Secret (a volume, a projected source, env or envFrom)? Only a notebook's token
refresher may read a credentials Secret, so each such pod is checked (docs/notebook.md). */}}
{{- define "quartermaster.celSecretPod" -}}
{{- $c := "(has(c.envFrom) && c.envFrom.exists(e, has(e.secretRef))) || (has(c.env) && c.env.exists(e, has(e.valueFrom) && has(e.valueFrom.secretKeyRef)))" -}}
(has(object.spec.volumes) && object.spec.volumes.exists(v, has(v.secret) || (has(v.projected) && has(v.projected.sources) && v.projected.sources.exists(s, has(s.secret))))) || object.spec.containers.exists(c, {{ $c }}) || (has(object.spec.initContainers) && object.spec.initContainers.exists(c, {{ $c }}))
{{- end }}

{{/* CEL: does the pod use generic ephemeral volumes (storage the quota counts)? */}}
{{- define "quartermaster.celEphemeralPod" -}}
(has(object.spec.volumes) && object.spec.volumes.exists(v, has(v.ephemeral)))
{{- end }}

{{- define "quartermaster.validateMatchConditions" -}}
{{- $conditions := list }}
{{- if include "quartermaster.filtered" (dict "root" . "hook" .Values.webhooks.validate) }}
{{- $pods := printf "request.resource.resource != 'pods' || request.operation == 'DELETE' || %s || %s" (include "quartermaster.celGpuPod" .) (include "quartermaster.celEphemeralPod" .) }}
{{- if .Values.webhooks.validate.notebookIdentity }}
{{- $pods = printf "%s || %s" $pods (include "quartermaster.celSecretPod" .) }}
{{- end }}
{{- $conditions = append $conditions (dict "name" "quota-relevant-pods" "expression" $pods) }}
{{- $pvc := "request.resource.resource != 'persistentvolumeclaims' || request.operation != 'UPDATE' || !has(object.spec.resources) || !has(oldObject.spec.resources) || object.spec.resources != oldObject.spec.resources" }}
{{- $conditions = append $conditions (dict "name" "claim-size-changes" "expression" $pvc) }}
{{- end }}
{{- $conditions = concat $conditions .Values.webhooks.validate.matchConditions }}
{{- toYaml $conditions }}
{{- end }}

{{- define "quartermaster.mutateRules" -}}
{{- if .Values.webhooks.mutate.rules }}
{{- toYaml .Values.webhooks.mutate.rules }}
{{- else }}
- apiGroups: [""]
  apiVersions: ["v1"]
  resources: ["pods"]
  operations: ["CREATE"]
  scope: Namespaced
{{- end }}
{{- end }}

{{/*
What ProfileQuota counts (docs/quota.md): CREATE and UPDATE of pods, PVCs, ResourceClaims and
ResourceClaimTemplates; with webhooks.validate.controllers, the controllers whose pod template it checks. Standalone state learns about deletions only from DELETE reviews; live state
watches the API instead, so DELETE is sent only in standalone mode.
*/}}
{{- define "quartermaster.validateRules" -}}
{{- if .Values.webhooks.validate.rules }}
{{- toYaml .Values.webhooks.validate.rules }}
{{- else }}
{{- $operations := concat (list "CREATE" "UPDATE") (ternary (list "DELETE") (list) (eq .Values.clusterState "standalone")) }}
- apiGroups: [""]
  apiVersions: ["v1"]
  resources: ["pods", "persistentvolumeclaims"]
  operations: {{ $operations | toJson }}
  scope: Namespaced
- apiGroups: ["resource.k8s.io"]
  apiVersions: ["*"]
  resources: ["resourceclaims", "resourceclaimtemplates"]
  operations: {{ $operations | toJson }}
  scope: Namespaced
{{- if .Values.webhooks.validate.controllers }}
- apiGroups: ["apps"]
  apiVersions: ["v1"]
  resources: ["deployments", "statefulsets", "replicasets", "daemonsets"]
  operations: ["CREATE", "UPDATE"]
  scope: Namespaced
- apiGroups: ["batch"]
  apiVersions: ["v1"]
  resources: ["jobs", "cronjobs"]
  operations: ["CREATE", "UPDATE"]
  scope: Namespaced
- apiGroups: ["kubeflow.org"]
  apiVersions: ["*"]
  resources: ["notebooks"]
  operations: ["CREATE", "UPDATE"]
  scope: Namespaced
{{- end }}
{{- if .Values.webhooks.validate.notebookIdentity }}
{{- if not .Values.webhooks.validate.controllers }}
- apiGroups: ["apps"]
  apiVersions: ["v1"]
  resources: ["statefulsets"]
  operations: ["CREATE", "UPDATE"]
  scope: Namespaced
- apiGroups: ["kubeflow.org"]
  apiVersions: ["*"]
  resources: ["notebooks"]
  operations: ["CREATE", "UPDATE"]
  scope: Namespaced
{{- end }}
- apiGroups: [""]
  apiVersions: ["v1"]
  resources: ["pods/ephemeralcontainers"]
  operations: ["UPDATE"]
  scope: Namespaced
{{- end }}
{{- end }}
{{- end }}

{{/* The platform policy CRDs' plurals (for RBAC), read from the generated files/crds. */}}
{{- define "quartermaster.policyPlurals" -}}
{{- $plurals := list }}
{{- range $path, $_ := .Files.Glob "files/crds/*.yaml" }}
{{- $crd := $.Files.Get $path | fromYaml }}
{{- $plurals = append $plurals $crd.spec.names.plural }}
{{- end }}
{{- toJson $plurals }}
{{- end }}

{{/* The policy objects' resources (plurals) per API group, as JSON: what the ClusterRole grants and the
     policy webhook checks, for the groups in live.policyObjectGroups */}}
{{- define "quartermaster.policyObjectResources" -}}
{{- dict "quartermaster.dev" (include "quartermaster.policyPlurals" . | fromJsonArray)
         "kyverno.io" (list "clusterpolicies" "policies" "policyexceptions")
         "policies.kyverno.io" (list "validatingpolicies" "mutatingpolicies" "generatingpolicies"
                                    "namespacedvalidatingpolicies" "namespacedmutatingpolicies"
                                    "namespacedgeneratingpolicies" "policyexceptions")
         "admissionregistration.k8s.io" (list "validatingadmissionpolicies" "validatingadmissionpolicybindings"
                                             "mutatingadmissionpolicies" "mutatingadmissionpolicybindings") | toJson }}
{{- end }}

{{/* The policy webhook's rules: CREATE and UPDATE of the policy objects read (live.policyObjectGroups), but
     Kubernetes' own admission policies, which the API server checks itself */}}
{{- define "quartermaster.policyObjectRules" -}}
{{- $kinds := include "quartermaster.policyObjectResources" . | fromJson }}
{{- $rules := list }}
{{- range $group := .Values.live.policyObjectGroups }}
{{- $plurals := index $kinds $group | default list }}
{{- if and $plurals (ne $group "admissionregistration.k8s.io") }}
{{- $rules = append $rules (dict "apiGroups" (list $group) "apiVersions" (list "*") "resources" $plurals
                                 "operations" (list "CREATE" "UPDATE") "scope" "*") }}
{{- end }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{/* NetworkPolicy ----------------------------------------------------------------------------------- */}}
{{/* The CIDRs the API server calls the webhook from, as a YAML list: networkPolicy.apiServerCIDRs when set;
     else the API servers' own addresses, read at install from the EndpointSlices of the `kubernetes` Service
     (control-plane nodes on self-managed clusters, the control plane's interfaces in the VPC on EKS); else
     none (an offline render finds nothing). */}}
{{- define "quartermaster.apiServerSources" -}}
{{- $cidrs := list }}
{{- if .Values.networkPolicy.apiServerCIDRs }}
{{- $cidrs = .Values.networkPolicy.apiServerCIDRs }}
{{- else }}
{{- $slices := lookup "discovery.k8s.io/v1" "EndpointSlice" "default" "" }}
{{- range (dig "items" list $slices) }}
{{- if eq (dig "metadata" "labels" "kubernetes.io/service-name" "" .) "kubernetes" }}
{{- $bits := ternary "/128" "/32" (eq .addressType "IPv6") }}
{{- range (.endpoints | default list) }}
{{- range (.addresses | default list) }}
{{- $cidrs = append $cidrs (printf "%s%s" . $bits) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml ($cidrs | uniq) }}
{{- end }}

{{- define "quartermaster.apiServerSourcesOrigin" -}}
{{- if .Values.networkPolicy.apiServerCIDRs }}values{{ else if include "quartermaster.apiServerSources" . | fromYamlArray }}cluster{{ else }}unresolved{{ end }}
{{- end }}

{{/* The default notebook policy with the site's values on the lines marked `# chart: KEY`: the value before the
comment is replaced, nothing else moves (a load error still names the file's own line). */}}
{{- define "quartermaster.notebookPolicy" -}}
{{- $v := .root.Values.notebook }}
{{- $issuer := required "notebook.issuer: set your identity provider's OIDC issuer URL (docs/deploy.md, Notebooks), or leave the notebook policy out with policies.exclude=[notebook-injection.yaml]" $v.issuer }}
{{- if not (regexMatch "^https://[^\\s#]+$" $issuer) }}
{{- fail (printf "notebook.issuer: %q is not an https:// URL" $issuer) }}
{{- end }}
{{- range $key, $value := dict "image\\.\\*" (include "quartermaster.image" .root) "notebook\\.issuer" (printf "--issuer=%s" $issuer) "notebook\\.credentialsSecretName" $v.credentialsSecretName "notebook\\.homeClaimName" $v.homeClaimName }}
{{- if not (regexMatch "^[-A-Za-z0-9][^\\s#'\"]*$" (toString $value)) }}
{{- fail (printf "%s: %q is not a plain value" (regexReplaceAll "\\\\" $key "") $value) }}
{{- end }}
{{- $_ := set $ "text" (regexReplaceAll (printf "(?m)^(\\s*(?:- )?(?:[A-Za-z]+: )?)\\S+(\\s+#.*chart: %s(?:\\s.*)?)$" $key) $.text (printf "${1}%s${2}" $value)) }}
{{- end }}
{{- .text }}
{{- end }}
