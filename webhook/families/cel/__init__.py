"""The "cel" policy family: Kyverno's CEL policies (policies.kyverno.io) and Kubernetes' admission policies
(admissionregistration.k8s.io). The family itself is `webhook.families.cel.family.CelFamily`."""
