{{/* The release's full name, at most 63 characters (a DNS label). */}}
{{- define "kafka-balancer.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kafka-balancer.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
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
