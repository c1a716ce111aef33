/* Placeholder: the HDF5 output lands here. */
typedef int rw_output_placeholder;
