/* walk.h — the rules every directory walk of ferry shares (the loader's
 * ImageFolder walk in source.c, catalogs' scan in catalog/scan.c): which
 * entries a walk sees and which names are images. */
#ifndef FY_WALK_H
#define FY_WALK_H

#include <stddef.h>

/* The names of dir's entries, read at once and the directory closed (a
 * deep tree never holds more than one directory open), sorted by strcmp.
 * Dot entries ("." and "..", and hidden names such as macOS's "._IMG.jpg"
 * or ".thumbnails") are left out: no walk of ferry looks inside them.
 * Returns 0, or an errno (ENOMEM, or opendir's / readdir's); on an error
 * part way, the names read so far are kept in *names (free them). */
int fy_dir_names(const char *dir, char ***names, size_t *n);
void fy_dir_names_free(char **names, size_t n);
/* The same, with what readdir says of each entry (types may be NULL):
 * FY_ENTRY_DIR, FY_ENTRY_FILE, or FY_ENTRY_ASK when only a stat can say (a
 * symbolic link, or a file system that does not tell), so that a walk
 * stats only those: a folder of a million images is listed without a
 * million stat calls (network file systems answer each one). *types is
 * freed with free(). */
enum { FY_ENTRY_ASK = 0, FY_ENTRY_DIR = 1, FY_ENTRY_FILE = 2 };
int fy_dir_entries(const char *dir, char ***names, unsigned char **types, size_t *n);

/* 1 when a file name has an image extension (FY_IMAGE_EXTENSIONS, any
 * case) and is not a dot file. */
int fy_is_image_name(const char *name);
/* The names fy_is_image_name takes, for messages; the formats behind them. */
#define FY_IMAGE_EXTENSIONS                                                                        \
  ".jpg .jpeg .jpe .jfif .png .webp .tif .tiff .gif .heic .heif .hif .avif .bmp .dng .cr2 .cr3 "   \
  ".nef .arw .orf .rw2 .raf .pef"
#define FY_IMAGE_FORMATS_READ "JPEG, PNG, WebP, TIFF, GIF, HEIF (HEIC, AVIF), BMP and camera raw"
#define FY_IMAGE_FORMATS_NOT_READ "Photoshop files are not read"

/* Image formats ferry does not read yet, known by extension (any case):
 * fy_not_read_format gives an index into fy_not_read_names ("Photoshop":
 * .psd, .psb), or -1. Walks count them so that "no image files" can say
 * which formats were seen. */
#define FY_NOT_READ_COUNT 1
extern const char *const fy_not_read_names[FY_NOT_READ_COUNT];
int fy_not_read_format(const char *name);
/* "2 Photoshop" for the counts by fy_not_read_format index, into
 * buf (empty when none was seen). */
void fy_not_read_describe(const size_t counts[FY_NOT_READ_COUNT], char *buf, size_t n);

#endif
