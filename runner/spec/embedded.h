/* embedded.h - files compiled into the binary (see KT_EMBEDDED in CMakeLists.txt). */
#ifndef KT_EMBEDDED_H
#define KT_EMBEDDED_H

extern const char kt_embedded_experiment_schema[];
extern const unsigned long kt_embedded_experiment_schema_len;
extern const char kt_embedded_models_schema[];
extern const unsigned long kt_embedded_models_schema_len;
extern const char kt_embedded_result_schema[];
extern const unsigned long kt_embedded_result_schema_len;
extern const char kt_embedded_models_yaml[];
extern const unsigned long kt_embedded_models_yaml_len;

#endif
