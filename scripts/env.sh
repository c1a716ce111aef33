# Sourced by the scripts: OpenMPI settings for running as root and on small machines.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Shared-memory and self transports only: no network probing on single-node runs.
export OMPI_MCA_btl=self,vader
