/* Reading recd's replies and events: the fields the library needs, each checked for its type;
 * fields it does not know are passed over, and a newer recd's additions change nothing. */
#include "internal.h"

#include <stdlib.h>

const char *asi_string(const json_t *object, const char *key) {
    return json_string_value(json_object_get(object, key));
}

bool asi_bool(const json_t *object, const char *key, bool *value) {
    const json_t *item = json_object_get(object, key);
    if (!json_is_boolean(item)) return false;
    *value = json_is_true(item);
    return true;
}

bool asi_integer(const json_t *object, const char *key, long long *value) {
    const json_t *item = json_object_get(object, key);
    if (json_is_integer(item)) {
        *value = (long long)json_integer_value(item);
        return true;
    }
    /* recd writes integral numbers without a fraction; a 2.0 is still the integer 2. */
    if (json_is_real(item)) {
        double number = json_real_value(item);
        if (number >= -9007199254740992.0 && number <= 9007199254740992.0 && number == (double)(long long)number) {
            *value = (long long)number;
            return true;
        }
    }
    return false;
}

/* A port description with only its three fields, in the order the Swift library writes them;
 * NULL when one is missing or of the wrong type. */
static json_t *port(const json_t *item) {
    const char *name = asi_string(item, "name"), *type = asi_string(item, "type");
    long long channels;
    if (!name || !type || !asi_integer(item, "channels", &channels)) return NULL;
    json_t *copy = json_object();
    json_object_set_new(copy, "name", json_string(name));
    json_object_set_new(copy, "type", json_string(type));
    json_object_set_new(copy, "channels", json_integer(channels));
    return copy;
}

static json_t *ports(const json_t *list) {
    if (!json_is_array(list)) return NULL;
    json_t *copy = json_array();
    size_t index;
    const json_t *item;
    json_array_foreach(list, index, item) {
        json_t *one = port(item);
        if (!one) {
            json_decref(copy);
            return NULL;
        }
        json_array_append_new(copy, one);
    }
    return copy;
}

static char *dump(json_t *value) {
    if (!value) return NULL;
    char *text = json_dumps(value, JSON_COMPACT);
    json_decref(value);
    return text;
}

char *asi_route_json(const json_t *route) {
    json_t *inputs = ports(json_object_get(route, "inputs"));
    json_t *outputs = ports(json_object_get(route, "outputs"));
    if (!inputs || !outputs) {
        json_decref(inputs);
        json_decref(outputs);
        return NULL;
    }
    json_t *copy = json_object();
    json_object_set_new(copy, "inputs", inputs);
    json_object_set_new(copy, "outputs", outputs);
    return dump(copy);
}

char *asi_ports_json(const json_t *list) { return dump(ports(list)); }
