#!/bin/bash
# The operator image's entrypoint. Spark's Kubernetes scheduler starts the scoring job's pods from this
# image with the first argument `driver` or `executor` and the rest in environment variables (Spark's
# container contract); anything else is a kafka-balancer command (`run`, `plan`, ...).
# pyspark is the Spark distribution: SPARK_HOME is its package directory.
set -euo pipefail
export SPARK_HOME="${SPARK_HOME:-/opt/kafka-balancer/pyspark}"

# A uid without a name in /etc/passwd (OpenShift's restricted-v2 picks one per namespace) gets one
# through nss_wrapper, in files of its own under the writable /tmp: Hadoop's login (the embedded
# scoring job, Spark's driver and executors) refuses a user without a name, and the root filesystem
# is read-only.
if ! whoami >/dev/null 2>&1; then
  nss="$(mktemp -d "${TMPDIR:-/tmp}/kafka-balancer-nss.XXXXXX")"
  cp /etc/passwd "$nss/passwd"
  cp /etc/group "$nss/group"
  echo "kafka-balancer:x:$(id -u):$(id -g):kafka-balancer:${HOME:-/tmp}:/usr/sbin/nologin" >>"$nss/passwd"
  getent group "$(id -g)" >/dev/null || echo "kafka-balancer:x:$(id -g):" >>"$nss/group"
  export LD_PRELOAD="libnss_wrapper.so${LD_PRELOAD:+ $LD_PRELOAD}" NSS_WRAPPER_PASSWD="$nss/passwd" \
    NSS_WRAPPER_GROUP="$nss/group"
fi

# The JVM options Spark hands an executor, one per SPARK_JAVA_OPT_<n> variable, in order.
spark_java_opts() {
  local name
  for name in $(compgen -e | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n); do
    printf '%s\n' "${!name}"
  done
}

case "${1:-}" in
  driver)
    shift
    # The driver pod runs the application in client mode inside itself, listening on its pod IP.
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    mapfile -t java_opts < <(spark_java_opts)
    exec "$JAVA_HOME/bin/java" -XX:+IgnoreUnrecognizedVMOptions "${java_opts[@]}" \
      -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
      -cp "$SPARK_HOME/conf:$SPARK_HOME/jars/*${SPARK_CLASSPATH:+:$SPARK_CLASSPATH}" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" \
      --executor-id "${SPARK_EXECUTOR_ID}" \
      --cores "${SPARK_EXECUTOR_CORES}" \
      --app-id "${SPARK_APPLICATION_ID}" \
      --hostname "${SPARK_EXECUTOR_POD_IP}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
      --podName "${SPARK_EXECUTOR_POD_NAME:-$HOSTNAME}"
    ;;
  *)
    exec kafka-balancer "$@"
    ;;
esac
