module kafka-balancer.invalid/hack/argocd

go 1.26

require github.com/yuin/gopher-lua v1.1.2
