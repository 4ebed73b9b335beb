{{/* The chart's name, or nameOverride. */}}
{{- define "kafka-balancer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name, at most 63 characters (a DNS label), or fullnameOverride. */}}
{{- define "kafka-balancer.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "kafka-balancer.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The operator's image: by digest when one is given (what was scanned is what runs), else by tag. */}}
{{- define "kafka-balancer.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{- define "kafka-balancer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kafka-balancer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kafka-balancer.labels" -}}
{{ include "kafka-balancer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kafka-balancer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kafka-balancer.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Namespaces whose Secrets the operator may read. */}}
{{- define "kafka-balancer.secretNamespaces" -}}
{{- $namespaces := .Values.kafka.secretNamespaces | default (list .Release.Namespace) -}}
{{- toJson $namespaces -}}
{{- end -}}

{{/* The namespaces the operator serves: watchNamespaces, else the release's; [] means every namespace
(clusterWide), the only mode whose grants (ConfigMaps, Leases, Events) reach kube-system too. */}}
{{- define "kafka-balancer.servedNamespaces" -}}
{{- if .Values.clusterWide -}}
{{- if .Values.watchNamespaces -}}
{{- fail "clusterWide serves every namespace: leave watchNamespaces empty, or set clusterWide=false" -}}
{{- end -}}
{{- toJson list -}}
{{- else -}}
{{- toJson (.Values.watchNamespaces | default (list .Release.Namespace)) -}}
{{- end -}}
{{- end -}}

{{/* Namespaces of pools scored with spark-submit: the driver's ServiceAccount and Role live there. */}}
{{- define "kafka-balancer.sparkNamespaces" -}}
{{- $namespaces := .Values.scoring.sparkSubmit.namespaces | default (include "kafka-balancer.servedNamespaces" . | fromJsonArray) | default (list .Release.Namespace) -}}
{{- toJson $namespaces -}}
{{- end -}}

{{/* Kopf watches CRDs to notice when our resources' versions change; read-only, cluster-scoped. */}}
{{- define "kafka-balancer.crdRule" -}}
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["get", "list", "watch"]
{{- end -}}

{{/* The rules for the operator's own resources, ConfigMaps and Events (cluster-wide or per namespace). */}}
{{- define "kafka-balancer.workRules" -}}
- apiGroups: ["kafkabalancer.io"]
  resources: ["brokerpools", "balancergoals"]
  verbs: ["get", "list", "watch", "patch"]
# Status is only ever patched, by kopf and by k8s/kube.py.
- apiGroups: ["kafkabalancer.io"]
  resources: ["brokerpools/status", "balancergoals/status"]
  verbs: ["get", "patch"]
# Plans, loads, execution state (and SparkApplications' inputs) live in ConfigMaps owned by each pool,
# read by name and written create-or-replace (k8s/kube.py): never listed, watched or patched.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "create", "update", "delete"]
# Kopf posts core/v1 Events (ours go through kopf.event too): created, never patched.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
# Each pool's execution lease (<pool>-execution): at most one process drives an execution.
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
# The StatefulSet a pool names, read for the disk and cpu capacity the pool leaves to it.
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get"]
{{- if .Values.strimzi.enabled }}
# A pool's spec.strimzi: the Kafka (listeners' addresses), its node pools (capacities, scale-downs)
# and the KafkaUser (its Secret's name); read only.
- apiGroups: ["kafka.strimzi.io"]
  resources: ["kafkas", "kafkanodepools", "kafkausers"]
  verbs: ["get", "list"]
{{- end }}
{{- if .Values.scoring.sparkApplications }}
- apiGroups: ["sparkoperator.k8s.io"]
  resources: ["sparkapplications"]
  verbs: ["get", "list", "watch", "create", "delete"]
{{- end }}
{{- if not .Values.clusterWide }}
- apiGroups: ["kopf.dev"]
  resources: ["kopfpeerings"]
  verbs: ["list", "watch"]
# Kopf's replicas write their heartbeats into the one peering object the chart makes.
- apiGroups: ["kopf.dev"]
  resources: ["kopfpeerings"]
  resourceNames: [{{ .Values.peering | quote }}]
  verbs: ["get", "patch"]
{{- end }}
{{- end -}}

{{/* The prefix of every cluster-scoped object of a release (its ClusterRoles and their bindings, the
webhook's configuration): named with the release's namespace too, so that two releases of one name
in two namespaces (one operator per team) never claim the same object. */}}
{{- define "kafka-balancer.clusterScopedName" -}}
{{- printf "%s-%s" (include "kafka-balancer.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/* The scale-down webhook's ValidatingWebhookConfiguration. */}}
{{- define "kafka-balancer.webhookConfiguration" -}}
{{- printf "%s-scale-down" (include "kafka-balancer.clusterScopedName" .) -}}
{{- end -}}

{{- define "kafka-balancer.webhookService" -}}
{{- printf "%s-webhook" (include "kafka-balancer.fullname" .) -}}
{{- end -}}

{{- define "kafka-balancer.webhookSecret" -}}
{{- printf "%s-webhook-tls" (include "kafka-balancer.fullname" .) -}}
{{- end -}}

{{/* The webhook's serving certificate and its CA (base64, as a Secret's data): the Secret's own when
it exists (helm upgrade), else new ones for the Service's DNS names. Made once per render and kept
on the root context, so the Secret, the configuration's caBundle and the Deployment's checksum are
of the same certificate whichever template asks first. `helm template` cannot look the Secret up:
it makes a new certificate each time. */}}
{{- define "kafka-balancer.webhookTLS" -}}
{{- if not (hasKey $ "kafkaBalancerWebhookTLS") -}}
{{- $found := lookup "v1" "Secret" .Release.Namespace (include "kafka-balancer.webhookSecret" .) -}}
{{- $data := dict -}}
{{- if and $found (hasKey ($found.data | default dict) "ca.crt") (hasKey $found.data "tls.crt") (hasKey $found.data "tls.key") -}}
{{- $data = pick $found.data "ca.crt" "tls.crt" "tls.key" -}}
{{- else -}}
{{- $service := include "kafka-balancer.webhookService" . -}}
{{- $names := list (printf "%s.%s.svc" $service .Release.Namespace) (printf "%s.%s.svc.cluster.local" $service .Release.Namespace) -}}
{{- $ca := genCA (printf "%s-webhook-ca" (include "kafka-balancer.fullname" .)) 3650 -}}
{{- $cert := genSignedCert (first $names) nil $names 3650 $ca -}}
{{- $data = dict "ca.crt" ($ca.Cert | b64enc) "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) -}}
{{- end -}}
{{- $_ := set $ "kafkaBalancerWebhookTLS" $data -}}
{{- end -}}
{{- toJson (get $ "kafkaBalancerWebhookTLS") -}}
{{- end -}}

{{/* The operator scopes its webhook's configuration to the pools' StatefulSets (k8s/scale_guard.py):
it reads and replaces that one object, no other. */}}
{{- define "kafka-balancer.webhookRule" -}}
{{- if .Values.webhook.enabled -}}
- apiGroups: ["admissionregistration.k8s.io"]
  resources: ["validatingwebhookconfigurations"]
  resourceNames: [{{ include "kafka-balancer.webhookConfiguration" . | quote }}]
  verbs: ["get", "update"]
{{- end -}}
{{- end -}}
