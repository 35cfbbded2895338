/* Placeholder translation unit for a module that has no sources yet. */
typedef int ba_empty_translation_unit;
