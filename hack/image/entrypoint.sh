#!/bin/bash
# The operator image's entrypoint. Spark's Kubernetes scheduler starts the scoring job's pods from this
# image with the first argument `driver` or `executor` and the rest in environment variables (Spark's
# container contract); anything else is a kafka-balancer command (`run`, `plan`, ...).
# pyspark is the Spark distribution: SPARK_HOME is its package directory.
set -euo pipefail
export SPARK_HOME="${SPARK_HOME:-/opt/kafka-balancer/pyspark}"

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
