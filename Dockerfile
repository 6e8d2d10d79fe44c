# The image of `kubectl-ns_doctor watch` (deploy/), built by goreleaser
# (.goreleaser.yaml, dockers_v2) from the binary it built for each
# platform: static, on distroless/static, as the numeric non-root user
# 65532. deploy/20-deployment.yaml runs it with a read-only root filesystem.
FROM gcr.io/distroless/static-debian12:nonroot
ARG TARGETPLATFORM
COPY ${TARGETPLATFORM}/kubectl-ns_doctor /kubectl-ns_doctor
USER 65532:65532
ENTRYPOINT ["/kubectl-ns_doctor"]
CMD ["watch"]
